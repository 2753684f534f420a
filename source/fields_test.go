package source

import (
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

func TestLocateFields(t *testing.T) {
	text := []byte(`apiVersion: v1
kind: List
items:
  - apiVersion: storage.azure.com/v1api20230101
    kind: StorageAccount
    metadata:
      name: sa
      annotations:
        serviceoperator.azure.com/reconcile-policy: skipp
    spec:
      owner: {name: rg}
      tags:
        team: a
      networkAcls:
        ipRules:
          - value: 1.2.3.4
          - valu: 5.6.7.8
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  locaton: westeurope
`)
	cases := []struct {
		line  int
		field string
		want  int
	}{
		{4, "metadata.annotations.serviceoperator.azure.com/reconcile-policy", 9},
		{4, "spec.owner.name", 11},
		{4, "spec.networkAcls.ipRules[1].valu", 17},
		{4, "spec.networkAcls.ipRules[1].value", 17}, // missing: the item
		{4, "spec.location", 10},                     // missing: its parent
		{4, "status", 4},                             // nothing of it: the object
		{19, "spec.locaton", 24},
		{4, "spec.tags[team]", 13},
		{4, "spec.tags[nobody]", 12},
		{7, "spec.owner", 7}, // not an object's first line: left alone
	}
	for _, c := range cases {
		e := &diag.Error{File: "f.yaml", Line: c.line, Field: c.field}
		LocateFields(diag.List{e}, manifest.TextMap{"f.yaml": text})
		if e.Line != c.want {
			t.Errorf("%s at line %d: located at %d, want %d", c.field, c.line, e.Line, c.want)
		}
	}
	// A file not in texts (generated text) keeps the object's line.
	e := &diag.Error{File: "other.yaml", Line: 4, Field: "spec.owner"}
	LocateFields(diag.List{e}, manifest.TextMap{"f.yaml": text})
	if e.Line != 4 {
		t.Errorf("other file: line %d", e.Line)
	}
	// Errors on a reported line are dropped; the report itself is not.
	errs := DropReported(diag.List{
		{File: "f.yaml", Line: 24, Msg: "${LOC}: variable is not set"},
		{File: "f.yaml", Line: 24, Field: "spec.locaton", Msg: "follows from it"},
		{File: "f.yaml", Line: 23, Field: "spec.tags", Msg: "another"},
	}, []string{"f.yaml:24"})
	if len(errs) != 2 || errs[0].Field != "" || errs[1].Field != "spec.tags" {
		t.Errorf("DropReported: %v", errs)
	}
}
