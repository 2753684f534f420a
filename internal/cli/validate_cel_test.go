package cli_test

import (
	"strings"
	"testing"
)

// TestValidateCompilesExpressions: validate and plan --offline refuse an
// export expression that does not compile against the kind's typed self
// (ASO's webhook refuses it the same way), naming file, object and field.
func TestValidateCompilesExpressions(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "id.yaml", `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: id
  namespace: n
spec:
  location: westeurope
  owner: {name: rg}
  operatorSpec:
    configMapExpressions:
      - name: out
        key: where
        value: self.spec.locaton
      - name: out
        key: ok
        value: self.spec.location + "/" + self.status.principalId
    secretExpressions:
      - name: out
        key: n
        value: string(size(self.metadata.labels)) + 1
`)
	for _, args := range [][]string{{"validate", "--dir", dir}, {"plan", "--offline", "--subscription", "22222222-2222-2222-2222-222222222222", "--dir", dir}} {
		_, stderr, err := run(t, args...)
		if err != nil {
			stderr += err.Error() // plan returns the refused revision's errors
		}
		if exitCode(err) != 1 {
			t.Fatalf("%s: exit code %d (%v), want 1\n%s", args[0], exitCode(err), err, stderr)
		}
		for _, want := range []string{
			`id.yaml:13: n/UserAssignedIdentity/id: spec.operatorSpec.configMapExpressions[0].value: failed to compile CEL expression: "self.spec.locaton"`,
			`undefined field 'locaton'`,
			`id.yaml:20: n/UserAssignedIdentity/id: spec.operatorSpec.secretExpressions[0].value: failed to compile CEL expression`,
			`found no matching overload for '_+_'`,
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", args[0], want, stderr)
			}
		}
		if strings.Contains(stderr, "configMapExpressions[1]") {
			t.Errorf("%s: the valid expression is reported:\n%s", args[0], stderr)
		}
	}
}
