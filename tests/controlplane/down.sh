#!/usr/bin/env bash
# Stop the control plane recorded in tests/controlplane/.run/state.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -x "$here/bin/triage-cp" ]]; then
  echo "down.sh: no bin/triage-cp, nothing was started from here"
  exit 0
fi
exec "$here/bin/triage-cp" down --state-dir "$here/.run" "$@"
