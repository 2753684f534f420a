package anchor

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func testPhases() []PhaseWindow {
	return []PhaseWindow{
		{Name: "aso", Writer: sideASO, Start: at(0), End: at(10)},
		{Name: "import", Writer: sideNone, Start: at(10), End: at(20)},
		{Name: "gitaso", Writer: sideGitaso, Start: at(20), End: at(30)},
		{Name: "export", Writer: sideASO, Start: at(30), End: at(40)},
	}
}

func testSides(p string) string {
	switch p {
	case "mi":
		return sideASO
	case "sp":
		return sideGitaso
	}
	return sideOther
}

const (
	rgPath    = "/subscriptions/s/resourceGroups/rg"
	queuePath = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/ns/queues/q"
)

func write(s int, principal, method, path string) emulator.WriteRecord {
	return emulator.WriteRecord{Time: at(s), Method: method, Path: path, Status: http.StatusOK, Principal: principal}
}

func TestCheckWritesAcceptsEachSideWritingInItsOwnPhases(t *testing.T) {
	recs := []emulator.WriteRecord{
		write(1, "mi", http.MethodPut, rgPath),
		write(2, "mi", http.MethodPut, queuePath),
		write(12, "sp", http.MethodPost, "/providers/Microsoft.ResourceGraph/resources"), // a query, not a write
		write(21, "sp", http.MethodPut, strings.ToUpper(queuePath)),                      // gitaso's change
		write(33, "mi", http.MethodPut, queuePath),                                       // ASO again, after the way back
		write(40, "mi", http.MethodPut, rgPath),                                          // the last phase includes its end
	}
	c := checkWrites(recs, testPhases(), testSides)
	if !c.OK() {
		t.Fatalf("check = %+v, want OK", c)
	}
	if c.Writes != 5 {
		t.Errorf("writes = %d, want 5 (the POST is not a write)", c.Writes)
	}
	if c.ByPhase["aso"][sideASO] != 2 || c.ByPhase["gitaso"][sideGitaso] != 1 || c.ByPhase["export"][sideASO] != 2 || len(c.ByPhase["import"]) != 0 {
		t.Errorf("by phase = %v", c.ByPhase)
	}
	if c.Resources["export"][sideASO] != 2 || c.Resources["gitaso"][sideGitaso] != 1 {
		t.Errorf("resources written = %v", c.Resources)
	}
}

func TestCheckWritesFindsBothWritersAndWritesOutOfTurn(t *testing.T) {
	recs := []emulator.WriteRecord{
		write(11, "sp", http.MethodPut, rgPath),       // gitaso writes during the import
		write(22, "sp", http.MethodPut, queuePath),    // gitaso's change...
		write(25, "mi", http.MethodPut, queuePath),    // ...and ASO fights it (the same resource, case aside)
		write(26, "other", http.MethodDelete, rgPath), // someone else
		write(50, "mi", http.MethodPut, rgPath),       // after the last phase
	}
	c := checkWrites(recs, testPhases(), testSides)
	if c.OK() {
		t.Fatal("check OK, want the fight found")
	}
	if len(c.Both) != 1 || !strings.Contains(c.Both[0], "gitaso: "+strings.ToLower(queuePath)) || !strings.Contains(c.Both[0], "aso, gitaso") {
		t.Errorf("both = %v, want the queue in phase gitaso written by aso and gitaso", c.Both)
	}
	want := []string{"import: gitaso PUT " + strings.ToLower(rgPath), "gitaso: aso PUT " + strings.ToLower(queuePath), "gitaso: other DELETE " + strings.ToLower(rgPath)}
	if len(c.Unexpected) != len(want) {
		t.Fatalf("unexpected = %v, want %v", c.Unexpected, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Unexpected[i], w) {
			t.Errorf("unexpected[%d] = %q, want %q…", i, c.Unexpected[i], w)
		}
	}
	if len(c.Outside) != 1 {
		t.Errorf("outside = %v, want the write after the last phase", c.Outside)
	}
}

func TestClassifyManagers(t *testing.T) {
	objs := []ObjectView{
		{Ref: "ResourceGroup platform/rg", ARMID: rgPath, Policy: "skip"},
		{Ref: "NamespacesQueue team-a/q", ARMID: queuePath, Policy: "skip"},
		{Ref: "StorageAccountsBlobService team-a/blob", ARMID: rgPath + "/blob", Policy: "detach-on-delete"},
	}
	held := map[string]bool{strings.ToLower(rgPath): true, strings.ToLower(rgPath + "/blob"): true}
	c := classifyManagers("handover", sideGitaso, objs, held, false)
	if c.OK() {
		t.Fatalf("check OK, want the queue managed by no one and the blob service by ASO: %+v", c)
	}
	if c.Gitaso != 1 || c.ASO != 1 || len(c.Neither) != 1 || c.Neither[0] != "NamespacesQueue team-a/q" {
		t.Errorf("managers = %+v", c)
	}
	if len(c.Wrong) != 1 || !strings.HasPrefix(c.Wrong[0], "StorageAccountsBlobService") || len(c.Held) != 1 {
		t.Errorf("wrong = %v, held = %v: want the blob service, managed by ASO and held by gitaso's state", c.Wrong, c.Held)
	}
	// After an import, ASO manages everything and gitaso's state holds it: allowed then, and only then.
	for i := range objs {
		objs[i].Policy = ""
	}
	held[strings.ToLower(queuePath)] = true
	if c := classifyManagers("import", sideASO, objs, held, true); !c.OK() || c.ASO != 3 || len(c.Held) != 3 {
		t.Errorf("after import = %+v, want ASO managing all three, held by the state", c)
	}
	if c := classifyManagers("export", sideASO, objs, held, false); c.OK() {
		t.Errorf("after export with the state still holding them = %+v, want not OK", c)
	}
	if c := classifyManagers("export", sideASO, objs, map[string]bool{}, false); !c.OK() || c.ASO != 3 {
		t.Errorf("after export = %+v, want ASO managing all three", c)
	}
	objs[0].Gone = true
	if c := classifyManagers("export", sideASO, objs, map[string]bool{}, false); c.OK() || len(c.Neither) != 1 {
		t.Errorf("with an object gone = %+v, want it managed by no one", c)
	}
}

func TestCountTrafficBySide(t *testing.T) {
	log := []emulator.LogEntry{
		{Method: http.MethodGet, Type: "microsoft.servicebus/namespaces/queues", Status: 200, Principal: "mi"},
		{Method: http.MethodPut, Type: "microsoft.servicebus/namespaces/queues", Status: 200, Principal: "mi"},
		{Method: http.MethodPost, Type: "microsoft.resourcegraph/resources", Status: 200, Principal: "sp"},
		{Method: http.MethodPost, Type: "microsoft.storage/storageaccounts", Status: 200, Principal: "sp"},
		{Method: http.MethodPost, Type: "identity", Status: 200, Principal: "sp"},
		{Method: http.MethodGet, Type: "identity", Status: 200},
	}
	tr := countTraffic(log, testSides)
	if a := tr[sideASO]; a == nil || a.Reads != 1 || a.Writes != 1 || a.Actions != 0 {
		t.Errorf("aso = %+v", a)
	}
	if g := tr[sideGitaso]; g == nil || g.Reads != 1 || g.Writes != 0 || g.Actions != 1 || g.Tokens != 1 {
		t.Errorf("gitaso = %+v", g)
	}
	if o := tr[sideOther]; o == nil || o.Tokens != 1 {
		t.Errorf("other = %+v", o)
	}
}

func TestWritesInCountsOnePhasesWritesOfAResource(t *testing.T) {
	recs := []emulator.WriteRecord{
		write(21, "sp", http.MethodPut, queuePath),
		write(22, "sp", http.MethodGet, queuePath), // not a write
		write(23, "sp", http.MethodPut, rgPath),    // another resource
		write(31, "mi", http.MethodPut, queuePath), // another phase
	}
	n := writesIn(recs, testPhases()[2], hasSuffix("/queues/q"), testSides)
	if len(n) != 1 || n[sideGitaso] != 1 {
		t.Errorf("writes = %v, want gitaso's one PUT of the queue", n)
	}
}

func TestClassifyManagersMidwayAcceptsEitherButNotNeither(t *testing.T) {
	objs := []ObjectView{
		{Ref: "ResourceGroup team-a/rg", ARMID: rgPath, Policy: "skip"},
		{Ref: "StorageAccountsBlobService team-a/blob", ARMID: rgPath + "/blob", Policy: "detach-on-delete"},
	}
	held := map[string]bool{strings.ToLower(rgPath): true}
	if c := classifyManagers("handover refused", "", objs, held, false); !c.OK() || c.ASO != 1 || c.Gitaso != 1 {
		t.Errorf("midway = %+v, want one resource each, OK", c)
	}
	if c := classifyManagers("handover refused", "", objs, map[string]bool{}, false); c.OK() || len(c.Neither) != 1 {
		t.Errorf("midway with the state empty = %+v, want the skipped group managed by no one", c)
	}
}

func TestPlanSaysNoChanges(t *testing.T) {
	for out, want := range map[string]bool{
		"No changes. Azure matches the repository.": true,
		"Plan: 0 to create, 0 to adopt, 0 to update, 0 drifted to correct, 0 to delete, 0 to detach; 18 unchanged, 0 observed.": true,
		"Plan: 0 to create, 0 to adopt, 1 to update, 0 drifted to correct, 0 to delete, 0 to detach; 17 unchanged, 0 observed.": false,
		"gitaso: something failed": false,
	} {
		if got := planSaysNoChanges(out); got != want {
			t.Errorf("planSaysNoChanges(%q) = %v, want %v", out, got, want)
		}
	}
}
