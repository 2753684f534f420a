// Package forgetest starts a real Gitea server, built from its Go module, for
// tests that talk to a forge for real: push over HTTP, pull request, webhook
// delivery, comment created then updated, commit status.
//
//	func TestPullRequestComment(t *testing.T) {
//		g := forgetest.Start(t) // skips when the binary is absent
//		g.CreateRepo(t, "app")  // gitaso/app, README on main
//		g.AddWebhook(t, "app", hook.URL, "secret")
//		head := g.Push(t, "app", map[string]string{"gitaso.yaml": "…"}, "feature", "msg")
//		n := g.OpenPR(t, "app", "feature", "main", "title")
//		g.API(t, "POST", "/repos/gitaso/app/statuses/"+head, map[string]string{"state": "success"}, nil)
//		// point gitaso at g.URL with g.Token
//	}
//
// # The binary
//
// scripts/gitea-binary.sh builds Gitea 1.26.0 from the module proxy and
// nothing else:
//
//	go mod download -json code.gitea.io/gitea@v1.26.0   # source in the module cache
//	cp -r <Dir> $tmp && cd $tmp                          # build it as the main module
//	CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -DSQLITE_MAX_VARIABLE_NUMBER=32766" \
//	  go build -mod=readonly -trimpath -tags 'sqlite sqlite_unlock_notify' \
//	  -ldflags "-s -w -X main.Version=1.26.0 -X 'main.Tags=sqlite sqlite_unlock_notify'" -o gitea .
//
// It puts the binary in ~/.cache/gitaso/gitea-v1.26.0/gitea (or
// $GITASO_GITEA_DIR) and skips the build when it is already there.
//
// Why built this way:
//
//   - `go install code.gitea.io/gitea@v…` refuses a module with replace
//     directives, and Gitea has several. A wrapper module that requires it
//     and copies them would work for 1.26 but not for 1.27, whose go.mod says
//     "module gitea.dev" although the proxy serves it as code.gitea.io/gitea
//     (a path mismatch Go rejects). Building the module's own source as the
//     main module uses its go.mod, go.sum and replaces unchanged, for both.
//   - Not 1.27.3, the newest on the proxy: it requires
//     gitea.dev/actions-proto-go v0.6.0, gitea.dev/sdk v1.1.0 and
//     gitlab.com/gitlab-org/api/client-go/v2 v2.42.0, which this proxy does
//     not serve (403 for gitea.dev, "not available" for that client-go), so
//     it cannot be built here. The script still handles 1.27+
//     (GITEA_VERSION=1.27.3) where those modules are reachable.
//   - cgo: Gitea 1.26 supports SQLite only through mattn/go-sqlite3 (cgo,
//     tags sqlite and sqlite_unlock_notify, as its Makefile builds it with
//     TAGS=sqlite), and SQLite is the one database a test can have without
//     another server. So the build needs gcc (.ci/run installs it). 1.27+
//     defaults to modernc.org/sqlite and would build with CGO_ENABLED=0; the
//     script picks that when the source has it.
//   - Go: 1.26.0's go.mod says go 1.26.2; the installed Go (1.26.8) is newer,
//     so GOTOOLCHAIN stays local. The script switches GOTOOLCHAIN to the
//     go.mod's version (the proxy serves toolchains) when the local Go is
//     older.
//   - No bindata tag: bindata needs generated files (and a web frontend
//     build with Node) that the module zip does not contain.
//
// How long, on this machine's 2 cores shared with other engineers' builds
// and tests: the first build took 18 min 39 s (9 min 49 s user + 2 min 46 s
// system CPU, load average about 10), including downloading Gitea's
// dependencies from the proxy; a second one with the modules cached but an
// empty build cache (GOCACHE) took 14 min 39 s (11 min 9 s user + 3 min 16 s
// system, load about 6–10). That is 12.5–14.5 CPU-minutes, so about 7–8
// minutes on 2 idle cores. The compile dominates; the cgo SQLite amalgamation
// is a small part of it. Later calls of the script return in a quarter of a
// second. The binary is 104 MiB. .ci/run bounds the build with a timeout
// ($GITASO_GITEA_BUILD_TIMEOUT, 10 minutes) and does not set
// GITASO_REQUIRE_FORGE, so CI stays within its 30 minutes: the forge tests run
// when the binary was built in time and skip otherwise.
//
// # What the binary needs at run time
//
//   - Its assets. Without bindata, Gitea reads options/ (locales, licences,
//     .gitignore templates, labels), templates/ and public/ from [server]
//     STATIC_ROOT_PATH. The script copies the three from the module source
//     to static/ beside the binary (15 MB); Start points STATIC_ROOT_PATH
//     there (or at $GITASO_GITEA_STATIC). Gitea exits at start without
//     options/locale/locale_en-US.json, even to serve only the API. public/
//     lacks the built web frontend (public/assets has only images), so the
//     web UI renders unstyled; the REST API, git over HTTP and webhooks,
//     which is all the tests use, are unaffected.
//   - git on PATH: Gitea runs git for every repository operation, and its
//     server-side hooks (pre- and post-receive) run this same binary
//     ("gitea hook"), which calls the server back at LOCAL_ROOT_URL with
//     INTERNAL_TOKEN. Git 2.39 works (SHA-256 repositories would need 2.42).
//   - A writable work directory. Start uses t.TempDir: app.ini in
//     custom/conf/, the SQLite database in data/, repositories in
//     repos/, the server's log in gitea.log (printed when the test fails).
//   - Not root, or I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true in app.ini, which
//     Start writes when the tests run as root (CI containers do); RUN_USER is
//     the current user.
//   - No network: OFFLINE_MODE, no mailer, no update checker, no cron, no
//     actions, no packages, no OAuth2 provider; Gravatar is off by default.
//     Webhooks may go to any host ([webhook] ALLOWED_HOST_LIST = *), so an
//     httptest.Server on 127.0.0.1 receives them.
//
// # Start
//
// Start writes app.ini (INSTALL_LOCK, SQLite in WAL mode, HTTP on
// 127.0.0.1:<free port> with ROOT_URL and LOCAL_ROOT_URL there, no SSH,
// in-memory queues, cache and sessions, issue indexer in the database),
// then runs
//
//	gitea migrate
//	gitea admin user create --admin --username gitaso --password … --email … --must-change-password=false
//	gitea admin user generate-access-token --username gitaso --token-name gitaso --scopes all --raw
//	gitea web
//
// and waits for GET /api/healthz. That takes 2.0–2.6 s here on an idle
// machine, 2.7–4 s with other builds running (up to 9 s with both cores
// saturated). The Gitea value carries URL, Token (scope
// all; "Authorization: token …", and the password for git over HTTP), User,
// Password and Dir; Stop (registered with t.Cleanup) sends SIGTERM to the
// server's process group and SIGKILL after 10 s.
//
// The helpers: CreateRepo (POST /user/repos with auto_init, default branch
// main), Push (git clone, write files, commit, git push over HTTP with basic
// auth as User with Token as the password), OpenPR, AddWebhook (type gitea,
// JSON, events pull_request and push unless others are named, signed with the
// secret in X-Gitea-Signature, hex HMAC-SHA256 of the body), and Do/API for
// any other REST call (path relative to /api/v1).
//
// Timings: each Push and OpenPR takes one to a few seconds (2.5–4 s under
// load), mostly the server-side git hooks, each a run of the 104 MiB gitea
// binary; other API calls take milliseconds. The whole smoke test (start,
// repository, two pushes, pull request, webhook deliveries, comment created
// and edited, commit status) takes 8–9 s on an idle machine, about 14 s under
// load, with -race (the race detector only instruments the test's side).
//
// Gitea handles pushes asynchronously: a webhook added right after a push
// may still receive that push's delivery. Webhooks go through an in-memory
// queue and arrive within a second or so of the event.
//
// # Environment
//
//   - GITASO_GITEA_BIN: the gitea binary (default: the newest
//     ~/.cache/gitaso/gitea-v*/gitea).
//   - GITASO_GITEA_STATIC: its assets (default: static/ beside the binary).
//   - GITASO_REQUIRE_FORGE=1: fail instead of skipping when the binary, its
//     assets or git are absent.
//   - For the script: GITEA_VERSION (default 1.26.0), GITASO_GITEA_DIR.
package forgetest
