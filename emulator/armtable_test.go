package emulator_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/emulator/internal/armtable"
)

// TestAnswerTableIsCurrent derives the table afresh from the shared conformance data, with the rules of the
// generator, and compares it with the one compiled into the emulator: a changed arm-responses.json or replay set
// fails here until `make emulator-table` regenerates armtable_gen.go.
func TestAnswerTableIsCurrent(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "conformance")
	data, err := os.ReadFile(filepath.Join(dir, "arm-responses.json"))
	if err != nil {
		t.Skipf("conformance table not found (set GITASO_SHARED): %v", err)
	}
	prov := emulator.AnswerTableProvenance()
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != prov.SHA256 {
		t.Fatalf("arm-responses.json has sha256 %x, the compiled table was generated from %s: run make emulator-table", sum, prov.SHA256)
	}
	types, src, err := armtable.Derive(data)
	if err != nil {
		t.Fatal(err)
	}
	if src.Cassettes != prov.Cassettes || len(types) != prov.Types {
		t.Errorf("provenance: %d cassettes, %d types; the file has %d, %d", prov.Cassettes, prov.Types, src.Cassettes, len(types))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "aso", "*", "*", "expected.json"))
	sort.Strings(files)
	sets := map[string][]byte{}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "aso"), filepath.Dir(f))
		sets[filepath.ToSlash(rel)] = b
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(rel), sha256.Sum256(b))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != prov.SetsSHA256 {
		t.Fatalf("the replay sets hash to %s, the compiled table was generated from %s: run make emulator-table", got, prov.SetsSHA256)
	}
	if _, err := armtable.PreferRecordedSets(types, sets); err != nil {
		t.Fatal(err)
	}
	supp, err := os.ReadFile(filepath.Join("gen", "supplement.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := armtable.ApplySupplement(types, supp); err != nil {
		t.Fatal(err)
	}
	if n := len(emulator.RecordedTypes()); n != len(types) {
		t.Errorf("compiled table has %d types, derived %d", n, len(types))
	}
	conv := func(cs []armtable.Counted) []emulator.RecordedAnswer {
		var out []emulator.RecordedAnswer
		for _, c := range cs {
			out = append(out, emulator.RecordedAnswer{Answer: c.Answer, Count: c.Count})
		}
		return out
	}
	for _, d := range types {
		got, ok := emulator.RecordedAnswers(d.Type)
		if !ok {
			t.Errorf("%s: not in the compiled table", d.Type)
			continue
		}
		want := emulator.RecordedType{Type: d.Type, Create: conv(d.Create), Update: conv(d.Update), Patch: conv(d.Patch), Delete: conv(d.Delete), APIVersions: d.APIVersions}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-derived +compiled):\n%s", d.Type, diff)
		}
	}
}

// TestAnswerTableAgreesWithReplaySets checks the table against ASO's shared replay sets: the status of every
// recorded create and re-PUT is the table's answer for the type (or one the sets themselves document as
// recorded against a resource that already existed), and every recorded DELETE status is one the table holds.
func TestAnswerTableAgreesWithReplaySets(t *testing.T) {
	root := filepath.Join(sharedDir(t), "conformance", "aso")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", "expected.json"))
	if len(files) == 0 {
		t.Skipf("conformance data not found under %s", root)
	}
	checked := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		var set expectedSet
		if err := jsonUnmarshal(data, &set); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, filepath.Dir(f))
		rel = filepath.ToSlash(rel)
		for _, r := range set.Resources {
			typ := typeOfPath(r.Path)
			row, ok := emulator.RecordedAnswers(typ)
			if !ok || len(row.Create) == 0 {
				t.Errorf("%s: %s is not in the table", rel, typ)
				continue
			}
			okStatuses := successes(r.PutStatusCodes)
			if len(okStatuses) == 0 {
				continue
			}
			create := mustParse(t, row.Create[0].Answer)
			if okStatuses[0] != create.Status && knownStatusDifferences[rel+" "+typ] == "" {
				t.Errorf("%s: %s created with %d, the table answers %s", rel, typ, okStatuses[0], row.Create[0].Answer)
			}
			update := updateAnswer(t, row)
			for _, st := range okStatuses[1:] {
				if st != update.Status {
					t.Errorf("%s: %s re-PUT answered %d, the table answers %s", rel, typ, st, update)
				}
			}
			checked++
		}
		for _, d := range set.DeleteOrder {
			typ := typeOfPath(d.Path)
			row, _ := emulator.RecordedAnswers(typ)
			found := false
			for _, a := range row.Delete {
				if mustParse(t, a.Answer).Status == d.Status {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: DELETE %s answered %d, not in the table's %v", rel, typ, d.Status, row.Delete)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

func mustParse(t *testing.T, s string) armtable.Answer {
	t.Helper()
	a, err := armtable.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// updateAnswer is the answer the emulator gives to a PUT of an existing resource of a type.
func updateAnswer(t *testing.T, row emulator.RecordedType) armtable.Answer {
	if len(row.Update) > 0 {
		return mustParse(t, row.Update[0].Answer)
	}
	a := mustParse(t, row.Create[0].Answer)
	if a.Status == http.StatusCreated {
		a.Status = http.StatusOK
	}
	return a
}

// checkAnswer compares a response with a table answer: status and polling headers.
func checkAnswer(resp *http.Response, want armtable.Answer) error {
	ao, loc := resp.Header.Get("Azure-AsyncOperation") != "", resp.Header.Get("Location") != ""
	wantLoc := want.Location || (want.Status == http.StatusAccepted && !want.AsyncOperation)
	if resp.StatusCode != want.Status || ao != want.AsyncOperation || loc != wantLoc {
		return fmt.Errorf("answered %d (Azure-AsyncOperation %t, Location %t), the table says %s", resp.StatusCode, ao, loc, want)
	}
	return nil
}

// typeBodies are valid bodies for the types whose creates the emulator validates beyond a location.
func typeBodies(e *emulator.Emulator, rg string) map[string]any {
	return map[string]any{
		"microsoft.authorization/roleassignments": map[string]any{"properties": map[string]any{
			"roleDefinitionId": "/subscriptions/" + e.SubscriptionID() + "/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7",
			"principalId":      "6f1c5e7a-1111-4b7e-9a3c-2d7c1c9f0a01", "principalType": "ServicePrincipal"}},
		"microsoft.authorization/roledefinitions": map[string]any{"properties": map[string]any{"roleName": "table-test-" + rg,
			"permissions": []any{map[string]any{"actions": []any{"*/read"}}}}},
		"microsoft.managedidentity/userassignedidentities/federatedidentitycredentials": map[string]any{"properties": map[string]any{
			"issuer": "https://issuer.example", "subject": "system:serviceaccount:a:b"}},
		"microsoft.network/privateendpoints": map[string]any{"location": "westus2", "properties": map[string]any{
			"subnet": map[string]any{"id": rgPath(e, rg) + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"}}},
		"microsoft.keyvault/vaults": map[string]any{"location": "westus2", "properties": map[string]any{
			"tenantId": e.TenantID(), "sku": map[string]any{"family": "A", "name": "standard"}}},
	}
}

// TestEmulatorAnswersAsTable creates, replaces and deletes a resource of every type the table knows and checks
// that the emulator answers each as the table says: the status and polling headers of a create and of an update,
// and the status of a DELETE sent after the resource group has gone. Every one also gets extension resources (a
// diagnostic setting, a role assignment), readable and listed under it and gone with its resource group.
func TestEmulatorAnswersAsTable(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	types := emulator.RecordedTypes()
	sort.Strings(types)
	tested := 0
	for i, typ := range types {
		row, _ := emulator.RecordedAnswers(typ)
		segs := strings.Split(typ, "/")
		if len(row.Create) == 0 || strings.EqualFold(segs[1], "locations") {
			continue
		}
		isRG := strings.EqualFold(typ, "Microsoft.Resources/resourceGroups")
		rg := rgPath(e, fmt.Sprintf("table%03d", i))
		if r := c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"}); !isRG && r.status != http.StatusCreated {
			t.Fatalf("RG: %d %s", r.status, r.raw)
		}
		if isRG {
			rg = rgPath(e, "tablerg")
		}
		bodies := typeBodies(e, fmt.Sprintf("table%03d", i))
		body := func(k string) any {
			if b, ok := bodies[strings.ToLower(k)]; ok {
				return b
			}
			return map[string]any{"location": "westus2", "properties": map[string]any{}}
		}
		id := rg
		if !isRG {
			id += "/providers/" + segs[0]
			for j := 1; j < len(segs); j++ {
				name := fmt.Sprintf("t%03dn%d", i, j) // valid for every provider; names of some are global
				if strings.HasPrefix(strings.ToLower(typ), "microsoft.authorization/role") {
					name = fmt.Sprintf("0b6f8a52-7c3d-4f1e-9a2b-%012d", i)
				}
				id += "/" + segs[j] + "/" + name
				if j < len(segs)-1 { // the parents first, answered as they may be
					resp := c.doResp(http.MethodPut, id, row.APIVersions[0], body(strings.Join(segs[:j+1], "/")))
					if _, err := c.wait(resp); err != nil {
						t.Fatalf("%s: parent %s: %v", typ, id, err)
					}
				}
			}
		}
		api := row.APIVersions[0]
		resp := c.doResp(http.MethodPut, id, api, body(typ))
		if err := checkAnswer(resp, mustParse(t, row.Create[0].Answer)); err != nil {
			t.Errorf("create %s: %v", typ, err)
		}
		if _, err := c.wait(resp); err != nil {
			t.Fatalf("create %s: %v", typ, err)
		}
		resp = c.doResp(http.MethodPut, id, api, body(typ))
		if err := checkAnswer(resp, updateAnswer(t, row)); err != nil {
			t.Errorf("update %s: %v", typ, err)
		}
		if _, err := c.wait(resp); err != nil {
			t.Fatalf("update %s: %v", typ, err)
		}
		patch := updateAnswer(t, row)
		if len(row.Patch) > 0 {
			patch = mustParse(t, row.Patch[0].Answer)
		}
		resp = c.doResp(http.MethodPatch, id, api, map[string]any{"tags": map[string]any{"patched": "yes"}})
		if err := checkAnswer(resp, patch); err != nil {
			t.Errorf("patch %s: %v", typ, err)
		}
		if _, err := c.wait(resp); err != nil {
			t.Fatalf("patch %s: %v", typ, err)
		}
		// Extension resources attach to a resource of every type: a diagnostic setting and a role assignment.
		extensions := []string{id + "/providers/Microsoft.Insights/diagnosticSettings/ext"}
		if r := c.do(http.MethodPut, extensions[0], "2021-05-01-preview", map[string]any{"properties": map[string]any{"logs": []any{}}}); r.status >= 300 {
			t.Errorf("diagnostic setting on %s: %d %s", typ, r.status, r.raw)
		}
		if !strings.HasPrefix(strings.ToLower(typ), "microsoft.authorization/") {
			ra := id + fmt.Sprintf("/providers/Microsoft.Authorization/roleAssignments/4c1f2a7e-5b6d-4e9f-8a0b-%012d", i)
			extensions = append(extensions, ra)
			if r := c.do(http.MethodPut, ra, authzAPI, bodies["microsoft.authorization/roleassignments"]); r.status != http.StatusCreated ||
				!strings.EqualFold(r.str("properties", "scope"), id) {
				t.Errorf("role assignment on %s: %d %s", typ, r.status, r.raw)
			}
		}
		for _, ext := range extensions {
			if r := c.do(http.MethodGet, ext, "2022-04-01", nil); r.status != http.StatusOK || !strings.EqualFold(r.str("id"), ext) {
				t.Errorf("GET %s: %d %s", ext, r.status, r.raw)
			}
			coll := ext[:strings.LastIndex(ext, "/")]
			r := c.do(http.MethodGet, coll, "2022-04-01", nil)
			if r.status != http.StatusOK {
				t.Errorf("list %s: %d %s", coll, r.status, r.raw)
				continue
			}
			// Role assignments are listed with those above the scope (the
			// subscription's owner): count the resource's own.
			own := 0
			for _, v := range r.body["value"].([]any) {
				if id, _ := v.(map[string]any)["id"].(string); strings.HasPrefix(strings.ToLower(id), strings.ToLower(coll)+"/") {
					own++
				}
			}
			if own != 1 {
				t.Errorf("list %s: %d of the resource's own, want 1: %s", coll, own, r.raw)
			}
		}
		if isRG {
			tested++
			continue
		}
		for _, a := range row.Delete { // a DELETE of the resource itself, where the table holds its answer
			if d := mustParse(t, a.Answer); d.Status != http.StatusNotFound && d.Status != http.StatusNoContent {
				resp := c.doResp(http.MethodDelete, id, api, nil)
				if err := checkAnswer(resp, d); err != nil {
					t.Errorf("delete %s: %v", typ, err)
				}
				resp.Body.Close()
				break
			}
		}
		if st, err := c.deleteAndWait(rg, rgAPI); err != nil || st != http.StatusAccepted {
			t.Fatalf("delete RG: %d %v", st, err)
		}
		gone := 0
		for _, a := range row.Delete {
			if st := mustParse(t, a.Answer).Status; st == http.StatusNotFound || st == http.StatusNoContent {
				gone = st
				break
			}
		}
		if gone != 0 {
			if r := c.do(http.MethodDelete, id, api, nil); r.status != gone {
				t.Errorf("DELETE %s after its resource group: %d, the table says %d", typ, r.status, gone)
			}
		}
		for _, ext := range extensions { // gone with the resource group
			if r := c.do(http.MethodGet, ext, "2022-04-01", nil); r.status != http.StatusNotFound {
				t.Errorf("GET %s after its resource group: %d", ext, r.status)
			}
		}
		tested++
	}
	t.Logf("%d types created, updated and deleted as the table says", tested)
	if tested < 200 {
		t.Errorf("only %d types tested", tested)
	}
}

// TestForcedAnswers forces the other answers Azure gave through the admin API: a storage account created with a
// synchronous 200 (recorded once) instead of 202 with Location, for one request only; refused settings name the
// override and its field.
func TestForcedAnswers(t *testing.T) {
	e := newEmulator(t, emulator.WithoutThrottling())
	c, _ := ownerClient(t, e)
	tok := e.AdminToken()
	rg := rgPath(e, "forced")
	c.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "westus2"})
	row, _ := emulator.RecordedAnswers("Microsoft.Storage/storageAccounts")
	if len(row.Create) < 2 || row.Create[0].Answer != "202+L" || row.Create[1].Answer != "200" {
		t.Fatalf("storage account creates in the table: %v", row.Create)
	}
	if st, b := adminDo(t, e, "PUT", "/_admin/faults", map[string]any{"answers": []any{
		map[string]any{"type": "microsoft.storage/STORAGEACCOUNTS", "op": "create", "answer": row.Create[1].Answer, "count": 1}}}, tok); st != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", st, b)
	}
	body := map[string]any{"location": "westus2", "kind": "StorageV2", "sku": map[string]any{"name": "Standard_LRS"}}
	r := c.do(http.MethodPut, rg+"/providers/Microsoft.Storage/storageAccounts/forced1", storageAPI, body)
	if r.status != http.StatusOK || r.header.Get("Location") != "" || r.str("properties", "provisioningState") != "Succeeded" {
		t.Errorf("forced create: %d %v %s", r.status, r.header, r.raw)
	}
	resp := c.doResp(http.MethodPut, rg+"/providers/Microsoft.Storage/storageAccounts/forced2", storageAPI, body)
	if err := checkAnswer(resp, mustParse(t, row.Create[0].Answer)); err != nil {
		t.Errorf("after the forced answer was used: %v", err)
	}
	if _, err := c.wait(resp); err != nil {
		t.Fatal(err)
	}
	// Match limits an override to the resources whose ID contains it; a delete can be forced too.
	e.SetFaults(emulator.Faults{Answers: []emulator.AnswerOverride{
		{Type: "Microsoft.Storage/storageAccounts", Op: "update", Answer: "200", Match: "forced2"},
		{Type: "Microsoft.Storage/storageAccounts", Op: "delete", Answer: "204"}}})
	for _, tc := range []struct {
		name string
		want armtable.Answer
	}{{"forced1", mustParse(t, row.Create[0].Answer)}, {"forced2", armtable.Answer{Status: http.StatusOK}}} {
		resp := c.doResp(http.MethodPut, rg+"/providers/Microsoft.Storage/storageAccounts/"+tc.name, storageAPI, body)
		if err := checkAnswer(resp, tc.want); err != nil {
			t.Errorf("update of %s: %v", tc.name, err)
		}
		if _, err := c.wait(resp); err != nil {
			t.Fatal(err)
		}
	}
	if r := c.do(http.MethodDelete, rg+"/providers/Microsoft.Storage/storageAccounts/forced1", storageAPI, nil); r.status != http.StatusNoContent {
		t.Errorf("forced delete: %d %s", r.status, r.raw)
	}
	if st, b := adminDo(t, e, "GET", "/_admin/answers?type=microsoft.storage/storageaccounts", nil, tok); st != http.StatusOK ||
		!strings.Contains(string(b), `"answer":"202+L"`) || !strings.Contains(string(b), emulator.AnswerTableProvenance().SHA256) {
		t.Errorf("GET /_admin/answers: %d %s", st, b)
	}
	for _, tc := range []struct {
		override map[string]any
		want     string
	}{
		{map[string]any{"type": "Microsoft.Storage/storageAccounts", "op": "create", "answer": "409"}, `is not a successful answer to a create`},
		{map[string]any{"type": "Microsoft.Storage/storageAccounts", "op": "replace", "answer": "200"}, `is not one of create, update, patch, delete`},
		{map[string]any{"type": "Microsoft.Storage/storageAccounts", "op": "create", "answer": "201+X"}, `unknown header letter`},
		{map[string]any{"type": "storageAccounts", "op": "create", "answer": "201"}, `is not an ARM type`},
		{map[string]any{"type": "Microsoft.Storage/storageAccounts", "op": "delete", "answer": "201"}, `not a successful answer to a delete`},
	} {
		st, b := adminDo(t, e, "PUT", "/_admin/faults", map[string]any{"answers": []any{tc.override}}, tok)
		if st != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%v: %d %s, want 400 with %q", tc.override, st, b, tc.want)
		}
	}
}
