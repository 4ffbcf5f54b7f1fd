#!/usr/bin/env bash
# Start the test control plane by hand (the test suite starts the same one by itself):
# builds if needed, keeps a healthy one recorded in .run/ (else replaces it), starts etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok detached, and writes kubeconfigs.
#   tests/controlplane/up.sh            # state in tests/controlplane/.run/
#   tests/controlplane/down.sh          # stop it
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/build.sh"
"$here/bin/triage-cp" up --reuse --state-dir "$here/.run" --config-dir "$here" "$@"
cat <<EOT

Use it:
  export KUBECONFIG=$here/.run/admin.kubeconfig
  $here/bin/triage-cp kubectl get nodes -o wide       # kubectl, built into triage-cp
  $here/bin/triage-cp kubectl --kubeconfig $here/.run/reader.kubeconfig auth can-i --list
  KUBECONFIG=$here/.run/reader.kubeconfig triage ...   # Triage as the read-only identity
Pod logs for the fake nodes: tests/support/controlplane.py ControlPlane.set_pod_logs.
Component logs: $here/.run/logs/. Keep it for the tests: they reuse a healthy one.
EOT
