// Package gittest runs a real Git server for tests: bare repositories served
// by git's own http-backend (smart HTTP, shallow clones included) through
// net/http/cgi inside an httptest TLS server, with optional basic auth and a
// log of every request so that tests can assert what was transferred.
//
//	srv := gittest.NewServer(t, gittest.WithBasicAuth("user", "secret"))
//	repo := srv.CreateRepo("platform")
//	sha := repo.Commit(map[string]string{"rg.yaml": "..."}, nil, "first")
//	// clone repo.URL() trusting srv.CABundle()
//
// Tests are skipped when the git binary is not installed.
package gittest
