// Package api serves gitaso's HTTP API over the state database: what gitaso
// manages, how its runs went, the latest plan, a sync trigger, health probes
// and Prometheus metrics. The routes and shapes below are a stable interface:
// add fields, never rename or remove them.
//
//	h := api.New(db, api.Options{
//		Sync:   loop.Trigger,          // func(ctx) error, must not block on the run
//		Ready:  loop.Ready,            // func() error
//		Logger: logger,
//		Token:  os.Getenv("GITASO_API_TOKEN"),
//	})
//	srv := &http.Server{Addr: ":8080", Handler: h}
//
// # Routes
//
//	GET  /api/v1/resources                              {"items":[Resource...]}
//	     ?namespace=team-a                              exact namespace
//	     ?kind=StorageAccount | storage.azure.com/StorageAccount   (case-insensitive)
//	     ?ready=true|false|unknown                      Ready condition status; no condition = unknown
//	GET  /api/v1/resources/{namespace}/{kind}/{name}    Resource (with appliedBody); 404 not_found;
//	GET  /api/v1/resources/{namespace}/{group}/{kind}/{name}   409 ambiguous_kind when a bare Kind
//	                                                    matches several groups (e.g. FlexibleServer)
//	GET  /api/v1/runs?limit=N                           {"items":[Run...]} newest first; default 50, 1..10000
//	GET  /api/v1/plan                                   the latest plan JSON exactly as the planner rendered it
//	                                                    ({"revision","resources":[...]}); 404 not_found before the first plan
//	POST /api/v1/sync                                   202 {"status":"accepted"}: a reconcile was triggered;
//	                                                    401 unauthorized without the bearer token (when Options.Token is set);
//	                                                    503 unavailable when Options.Sync is nil or refuses
//	POST /api/v1/webhook                                202: a Git host's push notification; the branch is fetched now.
//	                                                    Authenticated by Options.WebhookSecret: GitHub X-Hub-Signature-256,
//	                                                    GitLab X-Gitlab-Token, or a bearer token; 401 otherwise,
//	                                                    503 when no secret is configured
//	GET  /healthz                                       200 "ok" (text) while the process serves
//	GET  /readyz                                        200 "ok", or 503 "not ready: <reason>" (text)
//	GET  /metrics                                       Prometheus text format
//
// Every other path under /api/v1 answers 404, a wrong method 405, both as JSON
// errors. Paths outside the API go to Options.UI when set.
//
// # Shapes
//
// Resource:
//
//	{"namespace","group","version","kind","name","armId","apiVersion","file",
//	 "credential","policy","generation","revision","updatedAt",
//	 "ready":{"type":"Ready","status":"True|False|Unknown","severity":"Info|Warning|Error",
//	          "reason","message","observedGeneration","lastTransitionTime"},
//	 "outputs":{"<configmap>/<key>":"<value>"},       non-secret exports, with values
//	 "secretOutputs":["<secret>/<key>"],               secret exports, by name only
//	 "appliedBody":{...}}                              single-resource GET only; secret values redacted
//
// The applied-body hash and secret export values are never served.
//
// Run:
//
//	{"id","revision","trigger","startedAt","finishedAt","outcome":"succeeded|failed|refused|partial",
//	 "error","counts":{"create":1,...},"summary"}
//
// Error (every 4xx/5xx of the JSON API):
//
//	{"error":{"code":"bad_request|not_found|ambiguous_kind|unauthorized|method_not_allowed|unavailable|internal",
//	          "message":"..."}}
//
// # Metrics
//
//	gitaso_resources{ready="True|False|Unknown"}   gauge
//	gitaso_runs_total{outcome="succeeded|failed|refused|partial"}   counter (kept in state: survives restarts and run pruning)
//	gitaso_last_run_timestamp_seconds              gauge, 0 before the first run
//	gitaso_last_run_duration_seconds               gauge
//	gitaso_operations_in_flight                    gauge
//
// # Logging and auth
//
// Each request is logged with slog (method, path, status, duration): probes
// and scrapes at Debug, the rest at Info. Headers, query strings and bodies
// are not logged. Only mutating endpoints require the token; reads are open,
// so bind the listener to a trusted network or put it behind a proxy.
package api
