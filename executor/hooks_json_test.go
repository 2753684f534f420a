package executor

import (
	"encoding/json"
	"testing"
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
