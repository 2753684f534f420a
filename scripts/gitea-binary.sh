#!/usr/bin/env bash
# Builds a real Gitea server from source (Go module proxy only; nothing else is downloaded) for the tests that
# talk to a forge for real (harness/forgetest). The binary and the assets it reads at run time land in
# $GITASO_GITEA_DIR (default ~/.cache/gitaso/gitea-v$GITEA_VERSION):
#
#   gitea            the server, with SQLite: 1.26 only has the cgo driver (mattn/go-sqlite3, tags
#                    `sqlite sqlite_unlock_notify`, so gcc is needed); 1.27+ would be pure Go (modernc.org/sqlite)
#   static/          options/ (locales, licences, gitignores, labels), templates/ and public/ copied from the
#                    module source: a binary built without the `bindata` tag reads them from [server]
#                    STATIC_ROOT_PATH, which harness/forgetest points here
#
# They are reused when present: the first build takes several minutes on 2 cores (see harness/forgetest/doc.go),
# later calls return at once. Prints the binary's path on its last line.
set -euo pipefail
# 1.26.0, not the newer 1.27.3: 1.27 renamed its module to gitea.dev and requires gitea.dev/actions-proto-go
# v0.6.0, gitea.dev/sdk v1.1.0 and gitlab.com/gitlab-org/api/client-go/v2 v2.42.0, which the module proxy
# does not serve (403 / "not available"), so it cannot be built from the proxy alone. 1.26.0 can.
GITEA_VERSION=${GITEA_VERSION:-1.26.0}
out=${GITASO_GITEA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gitaso/gitea-v$GITEA_VERSION}
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
mkdir -p "$out"

if [ ! -x "$out/gitea" ] || [ ! -d "$out/static/options" ]; then
  echo "building gitea v$GITEA_VERSION (several minutes, once)" >&2
  start=$(date +%s)
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work" "$out/gitea.tmp" "$out/static.tmp"' EXIT
  trap 'exit 143' TERM INT # clean up when CI's timeout stops the build
  # The module is published as code.gitea.io/gitea but its go.mod says "module gitea.dev" (1.27+) and carries
  # replace directives, so neither `go install code.gitea.io/gitea@v…` nor a wrapper module requiring it works.
  # Build it as the main module instead, from a writable copy of its source in the module cache: its own go.mod,
  # go.sum and replace directives then apply unchanged.
  src=$(go mod download -json "code.gitea.io/gitea@v$GITEA_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "gitea v$GITEA_VERSION: no module source from the proxy" >&2; exit 1; }
  cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
  cd "$work/src"
  # Gitea needs Go at least as new as its go.mod's go line; fetch that toolchain from the proxy when the local
  # one is older (GOTOOLCHAIN=goX.Y.Z is served by the module proxy).
  need=$(go mod edit -json | sed -n 's/^\s*"Go": "\(.*\)",$/\1/p')
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$GOTOOLCHAIN" = local ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    export GOTOOLCHAIN="go$need"
    echo "gitea needs go $need, have $have: using GOTOOLCHAIN=$GOTOOLCHAIN" >&2
  fi
  if [ -f models/db/driver_sqlite_modernc.go ]; then
    tags="" && export CGO_ENABLED=0 # pure-Go SQLite is the default driver
  else
    # SQLite only through mattn/go-sqlite3 (cgo), as Gitea's own Makefile builds it with TAGS=sqlite.
    command -v "${CC:-gcc}" >/dev/null || { echo "gitea v$GITEA_VERSION needs a C compiler for SQLite (cgo)" >&2; exit 1; }
    tags="sqlite sqlite_unlock_notify" && export CGO_ENABLED=1
    export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DSQLITE_MAX_VARIABLE_NUMBER=32766"
  fi
  go build -trimpath -tags "$tags" -ldflags "-s -w -X 'main.Version=$GITEA_VERSION' -X 'main.Tags=$tags'" \
    -o "$out/gitea.tmp" .
  rm -rf "$out/static.tmp" && mkdir -p "$out/static.tmp"
  for d in options templates public; do
    if [ -d "$d" ]; then cp -r "$d" "$out/static.tmp/"; fi
  done
  rm -rf "$out/static" && mv "$out/static.tmp" "$out/static"
  mv "$out/gitea.tmp" "$out/gitea"
  echo "built gitea v$GITEA_VERSION in $(($(date +%s) - start))s" >&2
fi
"$out/gitea" --version >&2
echo "$out/gitea"
