package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate and plan decrypt an aso-credential Secret that SOPS encrypted for
// a PGP key, with the armored private key of --sops-pgp-keys (a file, or a
// directory of *.asc files as Flux's sops-gpg Secret mounts), no gpg binary;
// the wrong key fails naming the file and both fingerprints.
func TestPlanSOPSPGP(t *testing.T) {
	fixtures, err := filepath.Abs("../../source/render/testdata/sops")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := os.ReadFile(filepath.Join(fixtures, "aso-credential.pgp.sops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "platform/aso-credential.yaml", string(enc))
	write(t, dir, "platform/rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: platform\nspec:\n  location: westeurope\n")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("PATH", t.TempDir()) // no gpg binary to fall back on

	keys := t.TempDir() // the sops-gpg Secret as a volume: one *.asc per key
	for _, n := range []string{"test-only-pgp.asc", "test-only-other-pgp.asc"} {
		b, err := os.ReadFile(filepath.Join(fixtures, n))
		if err != nil {
			t.Fatal(err)
		}
		write(t, keys, n, string(b))
	}
	for _, k := range []string{filepath.Join(fixtures, "test-only-pgp.asc"), keys} {
		out, stderr, err := run(t, "plan", "--offline", "--dir", dir, "-o", "json", "--sops-pgp-keys", k)
		// The decrypted credential is the one the plan uses: its subscription.
		if exitCode(err) != 2 || !strings.Contains(out, `/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg`) {
			t.Errorf("plan with %s: exit %d\n%s\n%s", k, exitCode(err), out, stderr)
		}
		if strings.Contains(out+stderr, "test-client-secret") {
			t.Error("a decrypted value was printed")
		}
	}

	_, stderr, err := run(t, "validate", "--dir", dir, "--sops-pgp-keys", filepath.Join(fixtures, "test-only-other-pgp.asc"))
	if exitCode(err) != 1 || !strings.Contains(stderr, "platform/aso-credential.yaml:") || !strings.Contains(stderr, "no key given to gitaso opens this SOPS file (the file's keys: pgp ") || !strings.Contains(stderr, "gitaso's keys: PGP keys ") {
		t.Errorf("wrong key: exit %d\n%s", exitCode(err), stderr)
	}
	if _, _, err := run(t, "validate", "--dir", dir, "--sops-pgp-keys", filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--sops-pgp-keys") {
		t.Errorf("missing key file: %v", err)
	}
}
