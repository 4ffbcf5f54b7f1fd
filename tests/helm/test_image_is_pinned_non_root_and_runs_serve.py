"""helm/Dockerfile, linted here because no container engine runs in this environment: two
stages, an exactly pinned base, only project sources copied, a numeric non-root user that
matches the chart's securityContext, exec-form `triage serve`, and the chart's port."""

from __future__ import annotations

import re
import shlex
import tomllib

import yaml

from tests.helm.support import CHART, ROOT

DOCKERFILE = ROOT / "helm" / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for ins in _instructions():
        if ins[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def test_the_base_image_is_pinned_to_an_exact_release() -> None:
    args = dict(a.split("=", 1) for k, a in _instructions() if k == "ARG" and "=" in a)
    base = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base), base
    froms = [a for k, a in _instructions() if k == "FROM"]
    assert len(froms) >= 2, "multi-stage: build and runtime"
    assert all(f.startswith("${PYTHON_IMAGE} AS ") for f in froms), froms
    assert "latest" not in DOCKERFILE.read_text()


def test_the_runtime_stage_runs_triage_serve_as_the_charts_non_root_user() -> None:
    runtime = _stages()[-1]
    users = [a for k, a in runtime if k == "USER"]
    assert users, "runtime stage sets USER"
    uid, _, gid = users[-1].partition(":")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert int(uid) == values["podSecurityContext"]["runAsUser"] != 0
    assert int(gid) == values["podSecurityContext"]["runAsGroup"] != 0
    assert [a for k, a in runtime if k == "ENTRYPOINT"] == ['["triage"]']
    assert [a for k, a in runtime if k == "CMD"] == ['["serve"]']
    assert [a for k, a in runtime if k == "EXPOSE"] == [str(values["containerPort"])]
    # Only the built virtualenv crosses into the runtime stage.
    copies = [a for k, a in runtime if k == "COPY"]
    assert copies == ["--from=build /opt/triage /opt/triage"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "triage" in scripts


def test_the_build_stage_copies_only_sources_that_exist() -> None:
    build = _stages()[0]
    for k, a in build:
        assert k != "ADD", "ADD fetches URLs and unpacks archives; COPY is what is meant"
        if k == "COPY":
            *sources, _dest = shlex.split(a)
            for src in sources:
                assert (ROOT / src).exists(), src
    ignore = (ROOT / "helm" / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[1] == "*"  # everything excluded, then the sources re-included
    for src in ("triage/", "tools/", "judge/", "policies/", "pyproject.toml", "README.md"):
        assert f"!{src}" in ignore, src


def test_the_image_installs_the_model_libraries_extra() -> None:
    installs = [
        shlex.split(a) for k, a in _stages()[0] if k == "RUN" and "/opt/triage/bin/pip install" in a
    ]
    assert installs, "the build stage installs the package"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "llm" in extras
    assert any(".[llm]" in words for words in installs), installs
