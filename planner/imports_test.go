package planner_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportBoundary keeps the planner free of the Azure SDK and of the
// executor (DESIGN.md): planning must work air-gapped and stay pure.
func TestImportBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/gitaso/gitaso/planner").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/Azure/azure-sdk-for-go",
		"github.com/gitaso/gitaso/executor",
		"github.com/gitaso/gitaso/azure",
		"github.com/gitaso/gitaso/reconcile",
		"github.com/gitaso/gitaso/api",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("planner depends on %s", dep)
			}
		}
	}
}
