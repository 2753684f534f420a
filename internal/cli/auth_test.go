package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesNoAuthBeyondLoopback: gitaso serve listening beyond
// loopback with neither sign-in nor tokens does not start, and the error
// names the flag that allows it.
func TestServeRefusesNoAuthBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  location: westeurope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "serve", "--dir", dir, "--state", filepath.Join(dir, "gitaso.db"), "--listen", "0.0.0.0:0", "--subscription", "00000000-0000-0000-0000-000000000001")
	if err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") || !strings.Contains(err.Error(), "0.0.0.0:0") {
		t.Fatalf("serve on 0.0.0.0 without auth: %v, want a refusal naming --insecure-no-auth", err)
	}
	_, _, err = run(t, "serve", "--dir", dir, "--state", filepath.Join(dir, "second.db"), "--listen", "0.0.0.0:0",
		"--oidc-issuer", "https://login.example/t/v2.0", "--oidc-client-id", "c")
	if err == nil || !strings.Contains(err.Error(), "--oidc-redirect-url is required") {
		t.Fatalf("sign-in beyond loopback without a redirect URL: %v", err)
	}
}

// TestTokenCommand: gitaso token add prints a token once and writes only
// its hash; list names the tokens; revoke removes one.
func TestTokenCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	out, _, err := run(t, "token", "add", "--tokens-file", file, "ci", "--group", "platform-admins")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	if !strings.HasPrefix(tok, "gitaso_") || len(tok) < 40 {
		t.Fatalf("token %q", tok)
	}
	if _, _, err := run(t, "token", "add", "--tokens-file", file, "web"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "token", "add", "--tokens-file", file, "web"); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("a second token named web: %v", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), tok) || !strings.Contains(string(b), "ci sha256:") {
		t.Errorf("tokens file:\n%s", b)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode %v, want 0600", st.Mode().Perm())
	}
	if _, _, err := run(t, "token", "revoke", "--tokens-file", file, "ci"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "token", "list", "--tokens-file", file)
	if err != nil || strings.TrimSpace(out) != "web" {
		t.Errorf("list after revoking ci: %q %v", out, err)
	}
	if _, _, err := run(t, "token", "revoke", "--tokens-file", file, "ci"); err == nil {
		t.Error("revoking an absent token succeeded")
	}
}
