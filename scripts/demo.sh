#!/usr/bin/env bash
# make demo: the embedded Azure (gitaso emulator) + the gitaso daemon following a local Git repository made
# from examples/onboarding in ONE commit, its ${VAR}s filled in by Flux post-build substitution from the
# ConfigMap platform/platform-vars (this script writes the emulator's subscription, tenant and OIDC issuer:
# nothing Azure generates) and from platform/team-a-vars, which the team identity exports once Azure has
# created it (its clientId). Nothing is copied by hand. Runs until interrupted (Ctrl-C).
# Sign-in is on: the emulator's Entra ID signs people in (OpenID Connect) as one of two example users,
# admin@gitaso.local (group platform-admins) and alice@gitaso.local (group team-a); the script itself reads the
# API with a bearer token named "demo" (group platform-admins) from the tokens file $work/tokens.
# DEMO_ONESHOT=1 exits once the demo is set up and every resource is Ready (used by the demo's own test).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=${GITASO_BIN:-$root/bin/gitaso}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }

work=${DEMO_DIR:-$root/demo-data}
eport=${DEMO_EMULATOR_PORT:-8443}
aport=${DEMO_API_PORT:-8080}
api="http://127.0.0.1:$aport"

# Nothing is deleted before every check has passed: a demo still running in $work (its lock file names its
# process), a directory that is not a demo's, a port in use. A second `make demo` must not delete the first
# one's repository, state, logs and CA.
lock="$work/demo.pid"
mkdir -p "$work"
running() { # the demo process holding the lock, if it is alive and a demo (any live process without ps)
  local pid
  pid=$(cat "$lock" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  if command -v ps >/dev/null; then ps -o args= -p "$pid" 2>/dev/null | grep -q demo.sh || return 1; fi
  echo "$pid"
}
if pid=$(running); then
  echo "a demo (process $pid) is running in $work; stop it first, or start another with its own directory and ports:" >&2
  echo "  DEMO_DIR=<dir> DEMO_EMULATOR_PORT=<port> DEMO_API_PORT=<port> make demo" >&2
  exit 1
fi
if [ -n "$(ls -A "$work")" ] && [ ! -e "$work/demo.pid" ] && [ ! -e "$work/gitaso.db" ] && [ ! -e "$work/emulator.env" ]; then
  echo "$work is not empty and holds no demo: not deleting it; choose another DEMO_DIR" >&2
  exit 1
fi

# A port something else listens on fails now, naming it, not after minutes of waiting.
for p in "$eport:DEMO_EMULATOR_PORT:the emulator" "$aport:DEMO_API_PORT:gitaso's API and status page"; do
  IFS=: read -r port var what <<<"$p"
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "port $port ($what) is already in use on 127.0.0.1; free it or choose another: $var=<port> make demo" >&2
    exit 1
  fi
done

# Take the lock (noclobber: of two starts at once, one wins), then clear what a stopped demo left.
if [ -e "$lock" ] && ! running >/dev/null; then rm -f "$lock"; fi # a stopped demo's
if ! (set -o noclobber; echo $$ >"$lock") 2>/dev/null; then
  echo "another demo is starting in $work; not touching it" >&2
  exit 1
fi
find "$work" -mindepth 1 -maxdepth 1 ! -name demo.pid -exec rm -rf {} +

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$(cat "$lock" 2>/dev/null)" = $$ ]; then rm -f "$lock"; fi
}
trap cleanup EXIT
# Ctrl-C (or a TERM) stops the demo: the cleanup above stops the emulator and the daemon; exit 0 so that make does
# not call it an error.
trap 'echo; echo "demo stopped; its files stay in $work (the next make demo starts afresh)"; exit 0' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The demo cluster's OIDC issuer: the emulator mints the service-account token with it, and team-a's
# federated credential trusts it (variable CLUSTER_OIDC of platform-vars).
cluster_oidc=https://oidc.gitaso.local/cluster-01/

say "starting the emulator (ARM + Entra ID on https://127.0.0.1:$eport)"
"$bin" emulator --addr "127.0.0.1:$eport" --dir "$work/emulator" --latency 500ms \
  --federated-token-file "$work/emulator/federated-token" --federated-issuer "$cluster_oidc" \
  --user admin@gitaso.local=platform-admins --user alice@gitaso.local=team-a \
  --sign-in-redirect-uri "$api/auth/callback" \
  >"$work/emulator.env" 2>"$work/emulator.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q AZURE_FEDERATED_TOKEN_FILE "$work/emulator.env" 2>/dev/null && break; sleep 0.1; done
grep -q AZURE_FEDERATED_TOKEN_FILE "$work/emulator.env" || { cat "$work/emulator.log" >&2; exit 1; }
# shellcheck disable=SC1090
source "$work/emulator.env"
echo "tenant $AZURE_TENANT_ID, subscription $AZURE_SUBSCRIPTION_ID, cloud config $GITASO_CLOUD_CONFIG"
# Sign-in: the application the emulator registered for gitaso (its secret in a file, never on a command line),
# and a token for this script's own reads, in group platform-admins.
(umask 077; printf '%s\n' "$GITASO_OIDC_CLIENT_SECRET" >"$work/oidc-client-secret")
(umask 077; "$bin" token add --tokens-file "$work/tokens" demo --group platform-admins >"$work/demo-token")
auth=(-H "Authorization: Bearer $(cat "$work/demo-token")")

copy() { # copy examples/onboarding/$1 into the repo verbatim, except the example's platform-vars
  mkdir -p "$work/repo/$1"
  for f in examples/onboarding/"$1"/*.yaml; do
    [ "$(basename "$f")" = platform-vars.yaml ] || cp "$f" "$work/repo/$1/"
  done
}
write_vars() { # the repository's platform/platform-vars with the emulator's values
  mkdir -p "$work/repo/platform"
  {
    echo "# Written by scripts/demo.sh (make demo): the emulator's values for Flux post-build substitution;"
    echo "# gitaso serve runs with --substitute-from platform/platform-vars --substitute-from ConfigMap/platform/team-a-vars"
    echo "# --substitute-strict; team-a-vars is exported by the identity platform/team-a-identity (TEAM_A_CLIENT_ID)."
    echo "# See examples/onboarding/platform/platform-vars.yaml for what each variable is."
    echo "apiVersion: v1"
    echo "kind: ConfigMap"
    echo "metadata:"
    echo "  name: platform-vars"
    echo "  namespace: platform"
    echo "data:"
    echo "  SUBSCRIPTION_ID: \"$AZURE_SUBSCRIPTION_ID\""
    echo "  TENANT_ID: \"$AZURE_TENANT_ID\""
    echo "  CLUSTER_OIDC: \"$cluster_oidc\""
  } >"$work/repo/platform/platform-vars.yaml"
}
git_() { git -C "$work/repo" -c user.name=demo -c user.email=demo@gitaso.local "$@"; }

say "creating the Git repository $work/repo (one commit: the platform's onboarding of team-a, and team-a's resources)"
git init -q -b main "$work/repo"
copy platform
copy team-a
write_vars
git_ add -A && git_ commit -qm "onboard team-a: identity, federated credential, resource groups, roles; team-a: queue, topic, database, storage"

say "starting gitaso serve on $api"
"$bin" serve --repo "$work/repo" --branch main --cache-dir "$work/cache" --state "$work/gitaso.db" \
  --substitute-from platform/platform-vars --substitute-from ConfigMap/platform/team-a-vars --substitute-strict \
  --listen "127.0.0.1:$aport" --interval 2s --sync-period 5m --log-level info \
  --oidc-issuer "$GITASO_OIDC_ISSUER" --oidc-client-id "$GITASO_OIDC_CLIENT_ID" \
  --oidc-client-secret-file "$work/oidc-client-secret" --oidc-ca-file "$GITASO_CA_FILE" \
  --oidc-redirect-url "$api/auth/callback" --api-tokens-file "$work/tokens" \
  --policy-file "$root/examples/access/policy.csv" \
  >"$work/gitaso.out" 2>"$work/gitaso.log" &
serve_pid=$!
pids+=("$serve_pid")

ready_count() { # prints "<ready> <total>" for a namespace
  local body; body=$(curl -fsS "${auth[@]}" "$api/api/v1/resources?namespace=$1" 2>/dev/null) || { echo "0 0"; return; }
  echo "$(grep -o '"status":"True"' <<<"$body" | wc -l) $(grep -o '"armId"' <<<"$body" | wc -l)"
}
wait_ready() { # namespace expected-count
  local r t
  for _ in $(seq 1 300); do
    if ! kill -0 "$serve_pid" 2>/dev/null; then
      echo "gitaso serve has exited; the end of $work/gitaso.log:" >&2
      tail -n 5 "$work/gitaso.log" >&2
      return 1
    fi
    read -r r t < <(ready_count "$1")
    if [ "$t" -ge "$2" ] && [ "$r" -eq "$t" ]; then echo "$1: $r/$t resources Ready"; return 0; fi
    sleep 0.5
  done
  echo "$1: only $r/$t resources Ready; see $work/gitaso.log and $api/api/v1/resources?ready=false" >&2
  return 1
}
platform_count=$(cat examples/onboarding/platform/*.yaml | grep -c '^kind: ' || true)
secrets=$(cat examples/onboarding/platform/*.yaml | grep -c '^kind: \(Secret\|ConfigMap\)$' || true)
wait_ready platform $((platform_count - secrets))

team_count=$(cat examples/onboarding/team-a/*.yaml | grep -c '^kind: ' || true)
team_secrets=$(cat examples/onboarding/team-a/*.yaml | grep -c '^kind: \(Secret\|ConfigMap\)$' || true)
wait_ready team-a $((team_count - team_secrets))
client_id=$(curl -fsS "${auth[@]}" "$api/api/v1/resources/platform/UserAssignedIdentity/team-a-identity" |
  grep -o '"team-a-vars/TEAM_A_CLIENT_ID":"[^"]*"' | cut -d'"' -f4)
[ -n "$client_id" ] || { echo "team-a's identity exported no TEAM_A_CLIENT_ID" >&2; exit 1; }
echo "team-a's credential signed in as clientId $client_id: exported by the identity into ConfigMap platform/team-a-vars,"
echo "substituted into team-a/aso-credential in the same run (the plan showed team-a's resources as known after apply)"

cat <<EOF

gitaso is running. Look at:
  $api/                                    # the status page (resources, runs, plan, sync)
Sign in there ("Sign in", top right) through the emulator's Entra ID, choosing one of the example users:
  admin@gitaso.local                       # the platform admin (group platform-admins)
  alice@gitaso.local                       # a member of team-a (group team-a)
The API with the script's token (named "demo", group platform-admins; gitaso token add|revoke --tokens-file $work/tokens):
  T=\$(cat $work/demo-token)
  curl -s -H "Authorization: Bearer \$T" $api/api/v1/whoami       # who the API takes you for
  curl -s -H "Authorization: Bearer \$T" $api/api/v1/resources    # every resource with ASO's Ready condition
  curl -s -H "Authorization: Bearer \$T" $api/api/v1/runs         # runs and their revisions
  curl -s -H "Authorization: Bearer \$T" $api/api/v1/plan         # the latest plan (JSON interface)
  curl -s -X POST -H "Authorization: Bearer \$T" -H 'Content-Type: application/json' $api/api/v1/sync   # reconcile now
  $bin plan --dir $work/repo --offline --subscription $AZURE_SUBSCRIPTION_ID --substitute-from platform/platform-vars --substitute-from ConfigMap/platform/team-a-vars --substitute-strict
                                           # the plan as text, without Azure
Change a manifest and commit; the next poll (2 s) applies exactly that change:
  cd $work/repo && sed -i 's/maxDeliveryCount: 10/maxDeliveryCount: 5/' team-a/servicebus.yaml && git -c user.name=demo -c user.email=demo@gitaso.local commit -qam 'fewer retries'
Logs: $work/gitaso.log (daemon), $work/emulator.log. Emulator settings: source $work/emulator.env
EOF

if [ "${DEMO_ONESHOT:-0}" = 1 ]; then exit 0; fi
echo "Ctrl-C to stop."
wait
