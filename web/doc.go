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
//     filtered by namespace, kind and readiness (the API's own filters) and by
//     name; a detail view per resource with its applied body (secret values
//     already redacted by the API), its outputs, and its secret outputs by
//     name only;
//   - the recent runs (revision, trigger, outcome, counts per action, error,
//     and what a held run holds);
//   - the latest plan, rendered line for line like the CLI's text plan
//     (planner.RenderText): + ~ - > symbols, before -> after, movedFrom,
//     "(known after apply)", "(sensitive value)", and why a plan is held;
//   - a banner when the newest finished run is held by the deletion guard:
//     the revision, the reason and message, how many deletions of how many
//     managed resources, the first keys, the resources gitaso does not
//     manage that ARM's cascade would take, and an "Approve deletions"
//     button (confirmed in a dialog, then POST /api/v1/approve with the
//     revision);
//   - a banner when the newest finished run refused its revision (a YAML,
//     rendering or validation error): the revision, its errors, and the
//     revision that stays applied (GET /api/v1/runs "applied");
//   - a "Sync now" button (POST /api/v1/sync). When the API answers 401 the
//     page asks for the bearer token and retries the action; the token is
//     kept in memory only, never in the URL, cookies or web storage. Both
//     POSTs send Content-Type: application/json, which the API requires.
//
// It refreshes itself every few seconds while visible. State the user picks
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
