#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from source (Go module proxy; nothing else is downloaded) for the tests
# that need a Kubernetes API server (internal/kubetest). The binaries land in $GITASO_KUBE_ASSETS (default
# ~/.cache/gitaso/kube-v$K8S_VERSION) and are reused when present: the first build takes about 6–10 minutes on
# 2 cores, later calls return at once. Prints the directory on its last line.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.36.3}
ETCD_VERSION=${ETCD_VERSION:-3.6.5}
out=${GITASO_KUBE_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/gitaso/kube-v$K8S_VERSION}
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$out/kube-apiserver" ]; then
  echo "building kube-apiserver v$K8S_VERSION (6–10 minutes on two cores, once)" >&2
  minor=${K8S_VERSION#1.}
  mkdir -p "$work/k8s" && cd "$work/k8s"
  go mod init gitaso.local/kubeapiserver >/dev/null 2>&1
  # k8s.io/kubernetes points its staging modules at ./staging; point them at their published v0.x.y instead.
  modfile=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  go mod edit -require "k8s.io/kubernetes@v$K8S_VERSION"
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$modfile" | awk '{print $1}' | sort -u |
    while read -r m; do go mod edit -replace "$m=$m@v0.$minor"; done
  printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\nfunc main() {}\n' >tools.go
  go mod tidy >/dev/null 2>&1 || true
  go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
    -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
fi

if [ ! -x "$out/etcd" ]; then
  echo "building etcd v$ETCD_VERSION (under a minute, once)" >&2
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init gitaso.local/etcd >/dev/null 2>&1
  go mod edit -require "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  printf 'package main\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n\nfunc main() {}\n' >tools.go
  go mod tidy >/dev/null 2>&1 || true
  go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$out/etcd.tmp" "$out/etcd"
fi
"$out/kube-apiserver" --version >&2
echo "$out"
