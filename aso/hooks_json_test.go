package aso

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetPathKeepsOrder(t *testing.T) {
	in := []byte(`{"location":"w","properties":{"b":1,"createMode":"createOrRecover","a":"<x>"},"tags":{"z":"1"}}`)
	out, err := setPath(in, []string{"properties", "createMode"}, marshalJSON("recover"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"location":"w","properties":{"b":1,"createMode":"recover","a":"<x>"},"tags":{"z":"1"}}`; string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
	out, err = setPath([]byte(`{"location":"w"}`), []string{"properties", "subnets"}, json.RawMessage(`[]`))
	if err != nil || string(out) != `{"location":"w","properties":{"subnets":[]}}` {
		t.Errorf("got %s, %v", out, err)
	}
}

func TestMergeByName(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, x := range s {
			out = append(out, json.RawMessage(x))
		}
		return out
	}
	// Load balancer / scale set semantics: the manifest's rules win, Azure's
	// others are kept.
	got := mergeByName(raw(`{"name":"a","v":1}`), raw(`{"name":"a","v":2}`, `{"name":"b"}`))
	if d := cmp.Diff([]string{`{"name":"a","v":1}`, `{"name":"b"}`}, toStrings(got)); d != "" {
		t.Error(d)
	}
}

func toStrings(l []json.RawMessage) []string {
	var out []string
	for _, x := range l {
		out = append(out, string(x))
	}
	return out
}
