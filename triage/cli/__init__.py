"""The `triage` command line (entry point `triage.cli:main`)."""

from triage.cli.main import main

__all__ = ["main"]
