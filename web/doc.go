// Package web is gitaso's status page: one self-contained HTML page (plain
// HTML, CSS and JavaScript embedded in the binary, no framework, no CDN, no
// build step) that reads the JSON API of package api and so works
// air-gapped. Serve it as the API's UI:
//
//	h := api.New(db, api.Options{Sync: loop.Sync, Token: token, UI: web.Handler()})
//
// The page shows:
//
//   - the managed resources (namespace, kind, name, Ready status with ASO's
//     severity, reason and message, ARM ID, last revision, update time),
//     one line per resource (the ARM ID's tail, with the full ID in its
//     title, a Copy button and on the resource's page; long cells end in an
//     ellipsis with their text in the title), listed by namespace, then
//     dependencies first (a resource after its owner and what it
//     references: its depth in GET /api/v1/graph; the API's order, by key,
//     when the graph cannot be read), then kind and name, as the table's
//     caption says; filtered by namespace, kind, readiness and name (the
//     API's own filters), read 500 at a time ("Load more" follows the API's
//     continue token; the order is that of the rows loaded), with readiness
//     counts from GET /api/v1/summary;
//   - a resource page (#/resource/<key>) with its applied body (secret values
//     already redacted by the API), its last error, the diff of its last
//     change, the runs that touched it (linking to their pages), what it
//     depends on, its outputs, and its secret outputs by name only;
//   - the dependency graph (#/graph) of GET /api/v1/graph on one canvas:
//     a node per resource coloured by Ready (green True, red False, grey
//     Unknown), owner edges solid and reference edges dashed, laid out in
//     layers by dependency depth (a resource right of the deepest one it
//     depends on) within a band per namespace; drag to pan, wheel or +/-
//     to zoom, Fit, Find (name, kind or namespace; again for the next
//     match), click a node for its detail (what it depends on, what needs
//     it, a link to its page); the resources not ready are also listed as
//     links. Only the visible nodes are drawn, so 10,000 stay smooth;
//   - the recent runs (revision, trigger and phase, outcome, counts per
//     action, error, and what a held run holds), each with a run page
//     (#/run/<id>) listing the resources it touched with their action,
//     outcome and error, and its plan while gitaso keeps it (the phases of
//     the latest run);
//   - the latest run's plan: every phase of it when the run applied objects
//     known after apply in later phases (GET /api/v1/runs/{id}/plan for the
//     earlier phases, GET /api/v1/plan for the last), each rendered line for
//     line like the CLI's text plan
//     (planner.RenderText): + ~ - > symbols, before -> after, movedFrom,
//     "(known after apply)", "(sensitive value)" (or "(sensitive value
//     from Secret ns/name)" for a value substituted from a Secret, from the
//     resource's sensitive map), and why a plan is held;
//   - on every view, a banner when the newest finished run is held by the
//     deletion guard: the revision, the reason and message, how many
//     deletions of how many managed resources, the first keys, the
//     resources gitaso does not manage that ARM's cascade would take, and
//     an "Approve deletions" button (confirmed in a dialog, then POST
//     /api/v1/approve with the revision);
//   - a banner when the newest finished run refused its revision (a YAML,
//     rendering or validation error): the revision, its errors, and the
//     revision that stays applied (GET /api/v1/runs "applied");
//   - a banner (its own section, #health) while the source cannot be
//     fetched or the state cannot be written (GET /api/v1/status): the
//     repository (without credentials), the error, since when, how many
//     failures in a row, the revision last fetched or the next retry, and
//     why /readyz answers 503; a fetch or a run that works again removes it;
//   - a "Sync now" button (POST /api/v1/sync). When the API answers 401 the
//     page asks for the bearer token and retries the action; the token is
//     kept in memory only, never in the URL, cookies or web storage. Both
//     POSTs send Content-Type: application/json, which the API requires.
//
// It refreshes itself every few seconds while visible (the graph every 30 s).
// Routes may be written "#/graph" or "#graph". State the user picks
// (filters, selected resource, open section) lives in the URL fragment, so a
// view can be linked to.
//
// Every request to the API uses relative URLs, so the page also works behind
// a reverse proxy that mounts gitaso under a path prefix.
//
// # Routes
//
// Handler serves GET and HEAD of "/" (and "/index.html"), "/app.js" and
// "/style.css"; other paths answer 404, other methods 405. Responses carry a
// strict Content-Security-Policy (only same-origin scripts, styles and fetches;
// no inline code, no framing), X-Content-Type-Options: nosniff,
// Referrer-Policy: no-referrer, and a content-hash ETag with
// Cache-Control: no-cache so an upgraded binary is picked up at once.
package web
