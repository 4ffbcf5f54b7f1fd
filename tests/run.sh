#!/usr/bin/env bash
# The test command (README, and .ci/run calls exactly this). On a fresh machine it installs what
# the tests need — the Python environment, Debian's Prometheus, Alertmanager, PostgreSQL and Chromium (for
# the review page's browser tests), the Go-built
# control plane (kube-apiserver, controller-manager, scheduler, kwok) and the helm CLI — then
# runs the linters,
# the type checker, the import contracts and the whole test suite. Everything it builds is
# cached (.venv, pip's cache, tests/controlplane/bin, Go's build cache), so a warm run is quick.
# Extra arguments go to pytest (e.g. `bash tests/run.sh -m "not cluster"`).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "python environment"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

step "debian packages (prometheus, alertmanager, postgresql, chromium)"
bash tests/support/install_debs.sh

step "test control plane (go build, cached)"
bash tests/controlplane/build.sh

step "helm CLI (go install, cached)"
bash tests/helm/build_helm.sh

step "ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .

step "mypy --strict"
.venv/bin/mypy

step "import contracts"
.venv/bin/lint-imports

step "pytest"
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
step "done (pytest exit $rc)"
exit "$rc"
