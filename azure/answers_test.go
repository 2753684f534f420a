package azure

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

// TestClientOnEveryRecordedAnswer forces, one after the other, every answer real Azure gave to a create, an
// update or a delete in ASO's recordings (the emulator's table) and checks that gitaso's client completes each:
// a Put returns the resource, a Delete leaves nothing behind.
func TestClientOnEveryRecordedAnswer(t *testing.T) {
	env := newEmuEnv(t, emulator.WithoutThrottling())
	c := env.client(t, env.owner)
	ctx := context.Background()
	shapes := map[string]map[string]bool{"create": {}, "update": {}, "patch": {}, "delete": {}}
	alternates := 0
	for _, typ := range emulator.RecordedTypes() {
		row, _ := emulator.RecordedAnswers(typ)
		for op, list := range map[string][]emulator.RecordedAnswer{"create": row.Create, "update": row.Update, "patch": row.Patch, "delete": row.Delete} {
			for _, a := range list {
				if op == "delete" && (a.Answer == "404" || a.Answer == "204") {
					continue // a DELETE of a resource already gone
				}
				shapes[op][a.Answer] = true
			}
			if len(list) > 1 {
				alternates++
			}
		}
	}
	for _, a := range []string{"200", "204", "202+A", "202+AL"} { // also allowed to a DELETE, though not recorded
		shapes["delete"][a] = true
	}
	if alternates == 0 || len(shapes["create"]) < 5 {
		t.Fatalf("the table holds too few answers: %v", shapes)
	}
	rg := "/subscriptions/" + env.sub + "/resourceGroups/answers"
	if _, err := c.Put(ctx, rg, "2021-04-01", []byte(`{"location":"westus2"}`)); err != nil {
		t.Fatal(err)
	}
	const typ, api = "Microsoft.Cache/redis", "2023-08-01"
	n := 0
	for _, op := range []string{"create", "update", "patch", "delete"} {
		var list []string
		for a := range shapes[op] {
			list = append(list, a)
		}
		sort.Strings(list)
		for _, answer := range list {
			n++
			id := fmt.Sprintf("%s/providers/%s/r%d", rg, typ, n)
			body := []byte(`{"location":"westus2","properties":{"sku":{"name":"Basic","family":"C","capacity":0}}}`)
			env.e.SetFaults(emulator.Faults{Answers: []emulator.AnswerOverride{{Type: typ, Op: op, Answer: answer, Count: 1}}})
			out, err := c.Put(ctx, id, api, body)
			if err == nil && op == "update" {
				out, err = c.Put(ctx, id, api, body)
			}
			if err == nil && op == "patch" {
				out, err = c.Patch(ctx, id, api, []byte(`{"tags":{"patched":"yes"}}`))
			}
			if err != nil {
				t.Errorf("%s answered %s: Put: %v", op, answer, err)
				continue
			}
			if m := decode(t, out); m["id"] != id || prop(m, "properties", "provisioningState") != "Succeeded" {
				t.Errorf("%s answered %s: Put returned %s", op, answer, out)
			}
			if op != "delete" {
				continue
			}
			if err := c.Delete(ctx, id, api); err != nil {
				t.Errorf("delete answered %s: %v", answer, err)
			}
			if _, err := c.Get(ctx, id, api); !errors.Is(err, ErrNotFound) {
				t.Errorf("delete answered %s: the resource is still there (%v)", answer, err)
			}
		}
	}
	if left := env.e.CurrentFaults().Answers; len(left) != 1 || left[0].Count != -1 {
		t.Errorf("the last forced answer was not used up: %+v", left)
	}
	t.Logf("%d recorded answers (create %d, update %d, patch %d, delete %d) completed by the client; %d type operations have alternatives",
		n, len(shapes["create"]), len(shapes["update"]), len(shapes["patch"]), len(shapes["delete"]), alternates)
}
