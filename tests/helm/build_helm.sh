#!/usr/bin/env bash
# Build the real helm CLI the chart tests run: `go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION`
# into tests/helm/bin (git-ignored). Pinned: the chart is tested against exactly this helm.
#
# Idempotent and cached: does nothing when bin/helm already reports the pinned version; a cold
# build downloads the module and compiles it (a few minutes on 2 cores, mostly k8s.io packages
# shared with tests/controlplane in Go's build cache); a warm no-op takes milliseconds.
# Concurrent callers (parallel test sessions) wait on one flock instead of racing the build.
set -euo pipefail
cd "$(dirname "$0")"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
HELM_VERSION="v4.3.2"   # latest helm.sh/helm/v4 on the Go module proxy when the chart was written

mkdir -p bin
exec 9>bin/.build.lock
flock 9

if [[ -x bin/helm && -f bin/helm.version && "$(cat bin/helm.version)" == "$HELM_VERSION" ]]; then
  echo "build_helm.sh: bin/helm ${HELM_VERSION} is up to date"
  exit 0
fi

start=$(date +%s)
echo "build_helm.sh: go install helm.sh/helm/v4/cmd/helm@${HELM_VERSION} ..."
tmp="$(mktemp -d "$PWD/bin/.gobin.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# The version string helm prints comes from its internal/version package.
GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -buildvcs=false" timeout 1800 "$GO" install \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}" \
  "helm.sh/helm/v4/cmd/helm@${HELM_VERSION}"
mv "$tmp/helm" bin/helm
echo "$HELM_VERSION" > bin/helm.version   # last: marks the build complete
echo "build_helm.sh: done in $(( $(date +%s) - start ))s"
