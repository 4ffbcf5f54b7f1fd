"""What every `triage` sub-command shares: one way to fail, one way to reach the cluster,
the same options.

Exit statuses (see triage/cli.py): 2 usage or configuration, 3 the apiserver is unreachable or
refused us, 4 the thing named does not exist.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException
from rich.console import Console

from triage.settings import Settings

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_NOT_FOUND = 4


class Output(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


KubeconfigOpt = Annotated[
    Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: $KUBECONFIG).")
]
NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace to look in.")
]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context.")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text, json or markdown.")]


def fail(message: str, code: int) -> typer.Exit:
    """Print one plain line saying what is wrong and what to do; return the Exit to raise."""
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def api_client_from(settings: Settings, context: str | None) -> k8s.ApiClient:
    """An API client from the kubeconfig; a missing or broken one is a usage error."""
    kubeconfig = settings.kubeconfig_path()
    try:
        client: k8s.ApiClient = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None,
            context=context or settings.kube.context,
            persist_config=False,
        )
    except (ConfigException, FileNotFoundError) as e:
        where = kubeconfig or "~/.kube/config"
        raise fail(
            f"no usable kubeconfig at {where} ({e}). Set KUBECONFIG or pass --kubeconfig.",
            EXIT_USAGE,
        ) from e
    return client


def settings_with(kubeconfig: Path | None) -> Settings:
    """The settings root from the environment, with a --kubeconfig flag applied."""
    settings = Settings()
    if kubeconfig is not None:
        settings.kube.kubeconfig = kubeconfig
    return settings
