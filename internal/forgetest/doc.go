// Package forgetest starts a real Gitea server for tests.
package forgetest
