// Package e2e holds gitaso's end-to-end tests: a real Git server (git
// http-backend over TLS), the ARM + Entra ID emulator over HTTPS, a real
// bbolt state file, and the reconcile loop between them — the same code path
// as production with only the endpoints changed.
package e2e
