#!/usr/bin/env bash
# Printed by `make test` after the tests: which optional parts of the suite were skipped on this machine
# because what they need is absent, and how to get it. Each test says the same in its own skip message
# (go test -v shows them); this is the summary a newcomer sees without -v.
cache=${XDG_CACHE_HOME:-$HOME/.cache}
skipped=()
chromium=""
for p in "${GITASO_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do [ -n "$p" ] && [ -e "$p" ] && chromium=$p && break; done
driver=""
for p in "${GITASO_CHROMEDRIVER:-}" /usr/bin/chromedriver; do [ -n "$p" ] && [ -e "$p" ] && driver=$p && break; done
[ -n "$chromium" ] || skipped+=("the status page's browser tests (web/): no Chromium; apt-get install -y chromium chromium-driver")
[ -n "$chromium" ] && [ -z "$driver" ] && skipped+=("the status page's interactive browser tests (web/): no chromedriver; apt-get install -y chromium-driver")
kube=""
for d in "${GITASO_KUBE_ASSETS:-}" "$cache"/gitaso/kube-v*; do [ -n "$d" ] && [ -x "$d/kube-apiserver" ] && [ -x "$d/etcd" ] && kube=$d && break; done
[ -n "$kube" ] || skipped+=("the tests beside a cluster (cluster/, reconcile/, e2e/): no kube-apiserver and etcd; bash scripts/kube-binaries.sh builds them once (6–10 min)")
gitea="${GITASO_GITEA_BIN:-}"
[ -n "$gitea" ] || gitea=$(ls "$cache"/gitaso/gitea-v*/gitea 2>/dev/null | tail -1)
[ -n "$gitea" ] && [ -x "$gitea" ] || skipped+=("the pull-request tests against a real forge (forge/, autoplan/, e2e/): no Gitea; bash scripts/gitea-binary.sh builds it once (8–18 min)")
shared=${GITASO_SHARED:-../shared}
[ -d "$shared/conformance" ] || skipped+=("the conformance tests against ASO's recorded traffic: no ../shared beside the repository (set GITASO_SHARED or SHARED=)")
command -v az >/dev/null || skipped+=("the emulator driven by the Azure CLI (emulator): no az; apt-get install -y azure-cli")
if [ ${#skipped[@]} -eq 0 ]; then
  echo "make test: every optional part of the suite ran (browser, cluster, forge, conformance, Azure CLI)"
else
  echo "make test: skipped on this machine (the rest ran):"
  for s in "${skipped[@]}"; do echo "  - $s"; done
fi
