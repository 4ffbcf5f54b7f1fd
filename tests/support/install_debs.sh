#!/usr/bin/env bash
# Install the Debian packages the test suite runs for real: Prometheus (with promtool, for the
# OpenMetrics backfill), Alertmanager, PostgreSQL (the replicas' shared state; the server
# package only, tests/support/postgres.py runs it on a loopback port), and Chromium (the review page's browser tests drive
# /usr/bin/chromium headless through Playwright; no browser is ever downloaded). Idempotent:
# when the binaries are already on PATH it does nothing, so warm CI runs skip apt entirely. The packages' systemd services are never used;
# the tests start their own processes on free loopback ports with their own data dirs.
set -euo pipefail

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 \
  || command -v alertmanager >/dev/null 2>&1 \
  || need+=(prometheus-alertmanager)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
[ -x /usr/bin/chromium ] || need+=(chromium)

if [ "${#need[@]}" -eq 0 ]; then
  echo "install_debs: prometheus, promtool, alertmanager, postgresql and chromium already installed"
  exit 0
fi

# De-duplicate (prometheus may be listed twice).
mapfile -t pkgs < <(printf '%s\n' "${need[@]}" | sort -u)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

# Keep the packages' services from starting (we run our own processes): policy-rc.d answers
# 101 "action forbidden" to invoke-rc.d while we install. Only created if absent, removed after.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
  "${sudo_cmd[@]}" chmod +x "$policy"
  created_policy=1
fi
cleanup() {
  if [ "$created_policy" -eq 1 ]; then
    "${sudo_cmd[@]}" rm -f "$policy"
  fi
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}"
echo "install_debs: installed ${pkgs[*]}"
