package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gitaso/gitaso/record"
)

// Change is the last change of a resource's applied body: the fields it
// changed, by JSON pointer, with their values before and after (secret
// values redacted in both, as in appliedBody).
type Change struct {
	Revision string        `json:"revision,omitempty"`
	At       time.Time     `json:"at"`
	Action   string        `json:"action,omitempty"`
	Diff     []FieldChange `json:"diff"`
	// Created says the change created the resource (nothing before it).
	Created bool `json:"created,omitempty"`
	// HiddenOnly says the body changed only in redacted (secret) values.
	HiddenOnly bool `json:"hiddenOnly,omitempty"`
}

// FieldChange is one changed field; Op is add, remove or replace (as in
// JSON Patch).
type FieldChange struct {
	Path string          `json:"path"`
	Op   string          `json:"op"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// changeView compares the body before the last change with the applied one.
func changeView(c record.Change, applied json.RawMessage) (*Change, error) {
	out := &Change{Revision: c.Revision, At: c.At, Action: c.Action, Diff: []FieldChange{}}
	before, after := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	if len(c.Previous) == 0 {
		out.Created = true
	} else if err := leaves(c.Previous, before); err != nil {
		return nil, fmt.Errorf("previous body: %w", err)
	}
	if len(applied) > 0 {
		if err := leaves(applied, after); err != nil {
			return nil, fmt.Errorf("applied body: %w", err)
		}
	}
	for p, o := range before {
		n, ok := after[p]
		switch {
		case !ok:
			out.Diff = append(out.Diff, FieldChange{Path: p, Op: "remove", Old: o})
		case !bytes.Equal(o, n):
			out.Diff = append(out.Diff, FieldChange{Path: p, Op: "replace", Old: o, New: n})
		}
	}
	for p, n := range after {
		if _, ok := before[p]; !ok {
			out.Diff = append(out.Diff, FieldChange{Path: p, Op: "add", New: n})
		}
	}
	sort.Slice(out.Diff, func(i, j int) bool { return out.Diff[i].Path < out.Diff[j].Path })
	out.HiddenOnly = !out.Created && len(out.Diff) == 0
	return out, nil
}

// leaves adds the JSON pointer and value of every leaf of doc (scalars,
// empty objects and arrays) to out.
func leaves(doc json.RawMessage, out map[string]json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err
	}
	var walk func(p string, v any) error
	walk = func(p string, v any) error {
		switch x := v.(type) {
		case map[string]any:
			if len(x) > 0 {
				for k, c := range x {
					if err := walk(p+"/"+pointerEscaper.Replace(k), c); err != nil {
						return err
					}
				}
				return nil
			}
		case []any:
			if len(x) > 0 {
				for i, c := range x {
					if err := walk(p+"/"+strconv.Itoa(i), c); err != nil {
						return err
					}
				}
				return nil
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	}
	return walk("", v)
}

// pointerEscaper escapes a JSON pointer's token (RFC 6901), built once.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
