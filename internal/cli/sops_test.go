package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate decrypts a SOPS-encrypted aso-credential Secret with the age
// identities of --sops-age-key-file (or SOPS_AGE_KEY_FILE), and without them
// fails naming the file.
func TestValidateSOPS(t *testing.T) {
	fixtures := "../../source/render/testdata/sops"
	enc, err := os.ReadFile(filepath.Join(fixtures, "aso-credential.sops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := filepath.Abs(filepath.Join(fixtures, "test-only.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "platform/aso-credential.yaml", string(enc))
	write(t, dir, "platform/rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: platform\nspec:\n  location: westeurope\n")
	t.Setenv("SOPS_AGE_KEY_FILE", "")

	out, stderr, err := run(t, "validate", "--dir", dir, "--sops-age-key-file", key)
	if err != nil {
		t.Fatalf("validate with the key: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "valid") {
		t.Errorf("output %q", out)
	}
	if strings.Contains(out+stderr, "test-client-secret") {
		t.Error("a decrypted value was printed")
	}

	// The decrypted credential is the one the plan uses: its subscription.
	out, stderr, err = run(t, "plan", "--offline", "--dir", dir, "-o", "json", "--sops-age-key-file", key)
	if exitCode(err) != 2 || !strings.Contains(out, `/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg`) {
		t.Errorf("plan with the decrypted aso-credential: exit %d\n%s\n%s", exitCode(err), out, stderr)
	}

	_, stderr, err = run(t, "validate", "--dir", dir)
	if exitCode(err) != 1 || !strings.Contains(stderr, "platform/aso-credential.yaml:") || !strings.Contains(stderr, "no age identity is configured") {
		t.Errorf("without a key: exit %d\n%s", exitCode(err), stderr)
	}

	// The standard environment variable when the flag is not set.
	t.Setenv("SOPS_AGE_KEY_FILE", key)
	if _, stderr, err := run(t, "validate", "--dir", dir); err != nil {
		t.Errorf("validate with SOPS_AGE_KEY_FILE: %v\n%s", err, stderr)
	}
	// The wrong key.
	other, _ := filepath.Abs(filepath.Join(fixtures, "test-only-other.agekey"))
	_, stderr, err = run(t, "validate", "--dir", dir, "--sops-age-key-file", other)
	if exitCode(err) != 1 || !strings.Contains(stderr, "no age identity given to gitaso can decrypt this file (recipients: age1") {
		t.Errorf("wrong key: exit %d\n%s", exitCode(err), stderr)
	}
	// A key file that does not exist.
	if _, _, err := run(t, "validate", "--dir", dir, "--sops-age-key-file", filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--sops-age-key-file") {
		t.Errorf("missing key file: %v", err)
	}
}
