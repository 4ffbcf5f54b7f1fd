#!/usr/bin/env bash
# Build the test control plane: bin/triage-cp (kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd in one multi-call binary) and bin/kwok, both from this module so
# they share one set of compiled k8s.io packages in the Go build cache.
#
# Idempotent and cached: does nothing when both binaries are newer than go.mod, go.sum and
# the Go sources. A cold build takes minutes (see README.md); a warm no-op takes milliseconds.
set -euo pipefail
cd "$(dirname "$0")"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
K8S_VERSION="v1.36.3"   # keep in step with go.mod and kubernetesVersion in cmd/triage-cp/up.go

mkdir -p bin
exec 9>bin/.build.lock
flock 9   # concurrent test sessions wait for one build instead of racing it

up_to_date() {
  [[ -x bin/triage-cp && -x bin/kwok ]] || return 1
  local newer
  newer="$(find go.mod go.sum tools.go cmd -newer bin/triage-cp -print -quit; find go.mod go.sum -newer bin/kwok -print -quit)"
  [[ -z "$newer" ]]
}

if up_to_date; then
  echo "build.sh: bin/triage-cp and bin/kwok are up to date"
  exit 0
fi

ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=36 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"

start=$(date +%s)
echo "build.sh: building bin/triage-cp (k8s.io/kubernetes ${K8S_VERSION}) ..."
"$GO" build -ldflags "$ldflags" -o bin/triage-cp.tmp ./cmd/triage-cp
echo "build.sh: building bin/kwok ..."
"$GO" build -ldflags "-s -w" -o bin/kwok.tmp sigs.k8s.io/kwok/cmd/kwok
mv bin/kwok.tmp bin/kwok
mv bin/triage-cp.tmp bin/triage-cp   # last: its mtime marks the build complete
echo "build.sh: done in $(( $(date +%s) - start ))s"
