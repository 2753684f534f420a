// Package api serves gitaso's HTTP API over the state database: what gitaso
// manages, how its runs went, the latest plan, a sync trigger, health probes
// and Prometheus metrics. The routes and shapes below are a stable interface:
// add fields, never rename or remove them.
//
//	opts := api.Options{
//		Sync:       loop.Sync,             // func(ctx) error, must not block on the run
//		Approve:    loop.ApproveDeletions, // func(ctx, revision) error, idem
//		Ready:      loop.Ready,            // func() error
//		Logger:     logger,
//		Tokens:     tokens,                // api.LoadTokens(file, logger): named bearer tokens
//		SignIn:     &api.SignIn{...},      // OpenID Connect sign-in; one of the two unless loopback
//		ListenAddr: "127.0.0.1:8080",
//	}
//	if err := opts.Validate(); err != nil { ... }
//	srv := api.NewServer(api.New(db, opts), api.DefaultServerOptions())
//	err := srv.Serve(ln)
//
// # Routes
//
//	GET  /api/v1/resources                              {"items":[Resource...]} sorted by key, every match
//	     ?namespace=team-a                              exact namespace
//	     ?kind=StorageAccount | storage.azure.com/StorageAccount   (case-insensitive)
//	     ?ready=true|false|unknown                      Ready condition status; no condition = unknown
//	     ?name=acct                                     name contains (case-insensitive)
//	     ?limit=500&continue=<token>                    one page: {"items":[...],"continue":"<token>"}; see Pages
//	GET  /api/v1/resources/{namespace}/{kind}/{name}    Resource (with appliedBody, dependsOn, runs, lastChange);
//	GET  /api/v1/resources/{namespace}/{group}/{kind}/{name}   404 not_found; 409 ambiguous_kind when a bare
//	                                                    Kind matches several groups (e.g. FlexibleServer); a Resource
//	                                                    has otherWriter {caller,operation,at,writes,seenAt} while the
//	                                                    Activity Log shows writes with gitaso's principal it did not make
//	GET  /api/v1/runs?limit=N&continue=<token>          {"items":[Run...],"applied","refused","continue"} newest first;
//	                                                    default 50, 1..10000; refused: the run that refused the newest
//	                                                    revision, while no later revision rendered (the refreshes of the
//	                                                    applied revision that follow it do not end it)
//	GET  /api/v1/runs/{id}                              {"run":Run,"resources":[Touched...],"applied"}: the run and the
//	                                                    resources it touched; 404 when unknown or pruned, 400 for a bad id
//	GET  /api/v1/runs/{id}/plan                         the plan of run id, an earlier phase of the latest run (a run
//	                                                    applies objects known after apply in later phases, each a run
//	                                                    with phase and phaseOf; the last phase's plan is /api/v1/plan);
//	                                                    404 not_found for any other run: their plans are not kept
//	GET  /api/v1/units                                  {"items":[Unit...],"total","ready":{"True","False","Unknown"},"ignored"}:
//	                                                    the Flux Kustomizations and HelmReleases (units), sorted by ID;
//	                                                    total, ready and ignored count every unit, whatever the filters;
//	                                                    {"items":[]} for a repository without Flux objects
//	     ?kind=Kustomization|HelmRelease                (case-insensitive)
//	     ?namespace=team-a                              exact namespace
//	     ?ready=true|false|unknown                      Ready condition status
//	GET  /api/v1/units/{kind}/{namespace}/{name}        Unit with "resources":[Resource...]: the resources in state it
//	                                                    rendered (as the list shows them); 404 not_found
//	GET  /api/v1/graph                                  Graph: every resource and its owner/reference edges
//	GET  /api/v1/summary                                {"total","ready":{"True","False","Unknown"},"namespaces":[...],
//	                                                    "kinds":["group/Kind"...]}
//	GET  /api/v1/plan                                   the latest plan JSON exactly as the planner rendered it
//	                                                    ({"revision","resources":[...]}); 404 not_found before the first plan
//	GET  /api/v1/status                                 Status: readiness (as /readyz), whether the source can be fetched
//	                                                    and the state written (Options.Status); always 200
//	POST /api/v1/sync                                   202 {"status":"accepted"}: a reconcile was triggered (see below:
//	                                                    triggers are coalesced and rate-limited); body ignored, at most 64 KiB;
//	                                                    401 unauthorized without the bearer token (when Options.Token is set);
//	                                                    503 unavailable when Options.Sync is nil or refuses
//	POST /api/v1/approve {"revision":"<sha>"[,"plan":"<digest>"]}
//	                                                    202 {"status":"accepted","revision","plan"}: the deletions the deletion guard
//	                                                    held for that revision (a full SHA or a prefix of at least 7
//	                                                    characters) are released and a run is triggered; 400 bad_request
//	                                                    for another body; 409 conflict with Approve's message (nothing of
//	                                                    that revision held, an ambiguous prefix); 409 superseded with
//	                                                    {"error":{"code","message","held","current"}} when a newer
//	                                                    revision superseded the held one (approving it would release
//	                                                    nothing: the daemon plans the newer one); 401 as sync;
//	                                                    503 unavailable when Options.Approve is nil; "plan" names the held
//	                                                    plan's digest (record.Hold.PlanDigest): 409 plan_changed when the
//	                                                    held plan is another (its deletions changed); 403 missing_right
//	                                                    unless the caller has approve in every namespace the hold touches
//	GET  /api/v1/audit?limit=N&continue=T               {"items":[AuditEvent...],"continue"}: the audit trail, newest first
//	                                                    (default 100, at most 1000); admin in every namespace
//	POST /api/v1/webhook                                202: a Git host's push notification; the branch is fetched now.
//	                                                    Authenticated by Options.WebhookSecret: GitHub X-Hub-Signature-256,
//	                                                    GitLab X-Gitlab-Token, or a bearer token; 401 otherwise,
//	                                                    503 when no secret is configured
//	GET  /api/v1/whoami                                 {"identity":{kind,subject,name,groups,issuer},"signIn",
//	                                                    "loginURL","csrfToken","expiresAt"}: who the API takes the caller for
//	GET  /auth/login?return=/path                       302 to the OpenID Connect issuer (Options.SignIn; else 404)
//	GET  /auth/callback                                 303 to the return path with the session cookie, or 400/401/502
//	                                                    naming why the sign-in was refused
//	POST /auth/logout                                   clears the session cookie (X-CSRF-Token); 204, or 303 to /
//	GET  /healthz                                       200 "ok" (text) while the process serves
//	GET  /readyz                                        200 "ok", or 503 "not ready: <reason>" (text)
//	GET  /metrics                                       Prometheus text format; every metric: docs/metrics.md
//
// Every GET under /api/v1 may answer 429 too_many_requests with Retry-After
// when more requests arrive at once than the API serves (see Scale).
//
// # Pages
//
// GET /api/v1/resources and GET /api/v1/runs page as the Kubernetes API
// does: ?limit=N asks for at most N items (resources: 1..10000, default 500
// once a continue token is given; runs: as before) and the answer carries
// "continue", an opaque token, while more match; pass it back unchanged
// with the same filters for the next page (another filter, or a token that
// was altered, answers 400 bad_request). The last page has no "continue".
// Pages are read in key order, each from the state as it is when the page
// is asked for: a resource stored during the whole listing is served
// exactly once even when others are written between pages; one added or
// removed meanwhile may or may not be. Without limit and continue, GET
// /api/v1/resources answers every match as before ({"items":[...]}, no
// "continue").
//
// # Scale
//
// The lists, the graph and the summary are served from an index of the
// resources kept in memory and rebuilt when a resource is written
// (decoding only the records that changed; index.go): a page is a binary
// search; its items are encoded when a page first shows them and kept
// until the record changes (a long list is encoded as it is written, a
// chunk at a time, and not kept). Pages of up to
// 1,000 resources, the graph and the summary are kept encoded (and
// gzip-encoded) until the state changes; the plan is sent as the state
// stores it, gzip-compressed (decompressed for clients without gzip); larger answers are streamed
// from the index through a 32 KiB buffer, never held whole. Answers of 1 KiB
// and more are gzip-encoded for a client whose Accept-Encoding takes gzip
// (Vary: Accept-Encoding). At most Options.MaxInFlight GET requests under
// /api/v1 (64) are served at once; up to MaxQueued (512) more wait at most
// QueueWait (2 s) for their turn; the others are answered 429
// too_many_requests with Retry-After: 1, so that memory stays flat under
// any load. Limits and measured figures: docs/api.md.
//
// Every other path under /api/v1 answers 404, a wrong method 405, both as JSON
// errors. Paths outside the API go to Options.UI when set.
//
// # Shapes
//
// Resource:
//
//	{"namespace","group","version","kind","name","armId","apiVersion","file",
//	 "unit",                                           the unit that rendered it, "Kind/namespace/name"; absent outside units
//	 "credential","policy","generation","revision","updatedAt",
//	 "ready":{"type":"Ready","status":"True|False|Unknown","severity":"Info|Warning|Error",
//	          "reason","message","observedGeneration","lastTransitionTime"},
//	 "outputs":{"<configmap>/<key>":"<value>"},       non-secret exports, with values
//	 "secretOutputs":["<secret>/<key>"],               secret exports, by name only
//	 "appliedBody":{...},                              single-resource GET only; secret values redacted
//	 "dependsOn":["<key>"...],                         single-resource GET only: owner and references
//	 "runs":[{"run","revision","startedAt","action","outcome","error"}...],   single-resource GET only: the runs
//	                                                   that changed it or failed on it, newest first (at most 20)
//	 "lastChange":{"revision","at","action","created","hiddenOnly",          single-resource GET only: the diff of
//	               "diff":[{"path":"/properties/sku","op":"add|remove|replace","old","new"}...]}}
//	                                                   its last applied change, both bodies redacted; hiddenOnly
//	                                                   when only secret values changed
//
// The applied-body hash and secret export values are never served.
//
// Run:
//
//	{"id","revision","trigger","startedAt","finishedAt","outcome":"succeeded|failed|refused|partial|held",
//	 "error","counts":{"create":1,...},"summary","phase":2,"phaseOf":7,
//	 "held":{"reason","message","deletions","managed","keys":[...],"unmanaged":[...]}}   when deletions wait for
//	                                                  an approval (outcome held), or were held back in an applied run
//	                                                  (a parent whose cascade would take unmanaged resources)
//
// phase and phaseOf are set on a later phase of a reconcile (2, 3, ...; the
// first phase's run ID): its objects were known after apply and were
// applied once the earlier phase's resources exported their values.
//
// trigger is startup, interval, refresh, retry, api (POST /api/v1/sync or an
// approval) or webhook.
//
// Unit (record.Unit): a Flux Kustomization or HelmRelease, which renders,
// applies and fails alone. ready is Flux's Ready condition: True with
// ReconciliationSucceeded; False with BuildFailed, ArtifactFailed,
// DependencyNotReady, ParentNotReady, ReconciliationFailed or
// HealthCheckFailed (its objects are kept as last applied: not changed, not
// deleted); Unknown with Progressing while wait or healthChecks wait for
// Azure, and before its first record. lastAppliedRevision is the revision
// whose objects it last applied completely, lastAttemptedRevision the newest
// it was rendered or tried at; errors are "file:line: object: field:
// message" and never hold a secret value; objects are the state keys of its
// resources as last applied; ignored marks a release that renders no ASO
// object (or is skipped):
//
//	{"kind":"Kustomization|HelmRelease","namespace","name","file","line","parent":"<unit ID>",
//	 "dependsOn":["<unit ID>"...],"suspended","wait",
//	 "ready":{"type":"Ready","status":"True|False|Unknown","reason","message","lastTransitionTime"},
//	 "lastAppliedRevision","lastAttemptedRevision","errors":["file:line: ..."],"objects":["<key>"...],
//	 "ignored","appliedAt","nextRetryAt","updatedAt"}
//
// Touched (GET /api/v1/runs/{id}): a resource the run created, updated,
// adopted, moved, deleted or detached, or failed on; up-to-date and
// observed resources are not listed:
//
//	{"key":"<namespace>/<group>/<Kind>/<name>","action":"create|update|...","outcome":"applied|deleted|failed|skipped|...",
//	 "error"}
//
// Status (GET /api/v1/status, record.Health): what the daemon's loop knows
// of its source's fetches and its state's writes, kept in memory. source
// is failing from a fetch that failed (network, TLS, authentication, a
// repository or branch gone, no answer within the fetch timeout) until one
// succeeds; a revision fetched but refused is not a source failure (its
// run is refused). state is failing from a run that could not record (a
// full or read-only volume; nothing of it was applied) until a run
// records; nextRetryAt is when the loop tries again. Credentials in the
// repository URL are never shown:
//
//	{"ready":false,"reason":"the source cannot be fetched since ...: ...",
//	 "source":{"url":"https://git.example.com/platform.git","branch":"main","failing":true,
//	           "error":"git fetch https://git.example.com/platform.git (branch main): ...",
//	           "failingSince","consecutiveFailures":3,"failuresTotal":7,"lastAttemptAt","lastSuccessAt","revision"},
//	 "state":{"failing":false,"consecutiveFailures":0,"failuresTotal":0}}
//
// Times are RFC 3339 and left out while zero.
//
// Graph (GET /api/v1/graph), in columns: node i is keys[i], ready[i] is its
// Ready status as one letter (T, F, U); an edge [i,j] says node i depends
// on node j, in owners when j is its ARM parent (j's ARM ID is a prefix of
// i's), in references otherwise. 10,000 resources are about 0.6 MB:
//
//	{"keys":["<key>"...],"ready":"TTFU...","owners":[[i,j]...],"references":[[i,j]...]}
//
// Error (every 4xx/5xx of the JSON API):
//
//	{"error":{"code":"bad_request|not_found|ambiguous_kind|unauthorized|method_not_allowed|unavailable|internal|
//	                  forbidden|unsupported_media_type|request_too_large|conflict|too_many_requests|state_damaged|
//	                  missing_right|plan_changed",
//	          "message":"...", "right":"read|sync|approve|admin", "namespaces":["team-b"]}}
//
// # Rights per namespace
//
// Options.Policy (gitaso serve --policy-file; package access) grants each
// caller rights per namespace; the caller is the access.Identity the
// authentication put in the request's context. Without a policy every
// caller that passed authentication has every right (gitaso before
// policies). With one:
//
//   - every read needs read somewhere (else 403 missing_right, no
//     namespace); the lists, the summary, the graph, the units, the plan
//     (its resources, deferred objects, units and held keys) and the runs
//     (their held keys; the touched resources of GET /api/v1/runs/{id}) are
//     cut to the namespaces the caller reads; asking for another namespace
//     (?namespace=, a resource or unit of it) is 403 missing_right naming it.
//     A run's revision, counts and error stay: they are the repository's. A
//     held run whose keys were cut has its message and unmanaged IDs
//     replaced by a sentence saying how many are hidden.
//   - /metrics needs read in every namespace: its counts add up every
//     namespace (give a scraper a token of its own).
//   - POST /api/v1/sync needs sync in some namespace: a run reconciles the
//     whole repository to Git, which decides what is applied; the right
//     decides who may ask for it now.
//   - POST /api/v1/approve needs approve in every namespace the held
//     deletions (a cascade's parent included) are in; the 403 names those
//     missing.
//   - GET /api/v1/audit needs admin in every namespace.
//
// Every refusal, sync and approval is recorded in the audit trail
// (Options.Audit), and so is each named token's use, once a minute.
//
// A read that finds the state file damaged (a page bbolt cannot read) is
// answered 503 state_damaged, its message naming the damage and the ways out
// (gitaso state check, a backup, gitaso state rebuild; docs/state.md), and
// /readyz answers 503 from then on.
//
// # Metrics
//
//	gitaso_resources{ready="True|False|Unknown"}   gauge
//	gitaso_runs_total{outcome="succeeded|failed|refused|partial|held"}   counter (kept in state: survives restarts and run pruning)
//	gitaso_last_run_timestamp_seconds              gauge, 0 before the first run
//	gitaso_last_run_duration_seconds               gauge
//	gitaso_operations_in_flight                    gauge
//	gitaso_revision_held                           gauge, 1 when the newest finished run is held (alert on it)
//	gitaso_deletions_held                          gauge, the deletions that run holds, else 0
//	gitaso_api_requests_shed_total                 counter, API reads answered 429 too_many_requests
//	gitaso_source_last_success_timestamp_seconds   gauge, 0 before the first successful fetch (Options.Status)
//	gitaso_source_last_attempt_timestamp_seconds   gauge, 0 before the first fetch
//	gitaso_source_consecutive_failures             gauge, failed fetches since the last that succeeded
//	gitaso_source_failures_total                   counter, failed fetches since the process started
//	gitaso_state_write_consecutive_failures        gauge, runs that could not write the state since the last that did
//	gitaso_state_write_failures_total              counter
//	gitaso_ready                                   gauge, 1 while /readyz answers 200
//	gitaso_units{ready="True|False|Unknown"}       gauge, the units (Flux Kustomizations and HelmReleases) by Ready status
//	gitaso_unit_ready{kind,namespace,name,reason}  gauge, 1 when the unit is Ready, else 0; reason is its Ready reason
//	gitaso_unit_info{kind,namespace,name,ready,suspended,last_applied_revision}   gauge, 1 per unit
//	gitaso_unit_last_applied_timestamp_seconds{kind,namespace,name}   gauge, when it last applied completely; 0 never
//
// # Logging
//
// Each request is logged with slog (method, path, status, duration): probes
// and scrapes at Debug, the rest at Info. Headers, query strings and bodies
// are not logged.
//
// # Hardening
//
// Reads are open and only the mutating endpoints take the token, so the
// listener is the first line of defence: Options.Validate refuses to serve
// beyond loopback (ListenAddr "0.0.0.0:8080", ":8080", a routable address
// or name) without a Token. Then, even with no token (the loopback default):
//
//   - Host: every endpoint but /healthz and /api/v1/webhook answers only a
//     Host header naming a loopback address, localhost (or *.localhost),
//     ListenAddr's host (any IP address when it is unspecified), or one of
//     Options.AllowedHosts; others get 403 forbidden. A page that rebinds
//     its DNS name to 127.0.0.1 (DNS rebinding) reaches the API under its
//     own name, so it can neither read status nor post. /healthz answers
//     "ok" to anyone. The webhook is exempt because Git hosts call it by the
//     public name of whatever forwards to gitaso, and every call must prove
//     the webhook secret (HMAC or token), which a rebinding page cannot.
//   - Cross-site requests: POST /api/v1/sync and /api/v1/approve refuse a
//     Sec-Fetch-Site other than same-origin (or none) and an Origin other
//     than the server's own (403 forbidden), and require
//     Content-Type: application/json (415 unsupported_media_type): a page of
//     another origin cannot send that without a CORS preflight, which the
//     API never grants (no Access-Control-Allow-* headers), so a form or a
//     text/plain fetch triggers nothing. Behind a reverse proxy, forward the
//     Host the browser sent (nginx: proxy_set_header Host $host) and list it
//     in AllowedHosts, so that the page's Origin matches it.
//     curl -X POST -H 'Content-Type: application/json' localhost:8080/api/v1/sync
//   - Authentication (auth.go, tokens.go, signin.go): a named bearer token
//     ("Authorization: Bearer <token>", the scheme in any case, looked up by
//     its SHA-256; an unknown one is 401 with WWW-Authenticate) or the
//     encrypted session cookie of an OpenID Connect sign-in (GET /auth/login,
//     GET /auth/callback, POST /auth/logout) decides the request's
//     access.Identity; GET /api/v1/whoami answers it. A signed-in browser's
//     POSTs carry the session's X-CSRF-Token (403 csrf without). With sign-in
//     or tokens configured, the POSTs need a caller (401). docs/security.md.
//   - Limits: NewServer with DefaultServerOptions cuts slow headers (10 s),
//     slow bodies (the whole request within 30 s), slow responses (60 s) and
//     idle keep-alive connections (60 s), and refuses headers over 64 KiB
//     (431); bodies are read through http.MaxBytesReader: 64 KiB for sync
//     and approve, 1 MiB for the webhook (413 request_too_large).
//   - Triggers are cheap to accept and expensive to run: the reconcile loop
//     coalesces them (a pending request absorbs the next ones) and starts an
//     API-triggered run no sooner than reconcile.MinTriggerInterval after
//     the previous run ended.
package api
