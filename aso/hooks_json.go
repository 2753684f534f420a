package aso

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// orderedObject is a JSON object whose members keep their order and their
// exact bytes, so that a hook can change one value of a body and send the
// rest exactly as the converter produced it.
type orderedObject struct {
	keys []string
	vals []json.RawMessage
}

// parseObject reads a JSON object without reordering its members.
func parseObject(b []byte) (*orderedObject, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("read JSON object: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("read JSON object: not an object")
	}
	o := &orderedObject{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read JSON object: %w", err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("read JSON object member %q: %w", k, err)
		}
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read JSON object: %w", err)
	}
	return o, nil
}

func (o *orderedObject) index(k string) int {
	for i, key := range o.keys {
		if key == k {
			return i
		}
	}
	return -1
}

// get returns a member's raw value.
func (o *orderedObject) get(k string) (json.RawMessage, bool) {
	if i := o.index(k); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// set replaces a member in place, or appends it.
func (o *orderedObject) set(k string, v json.RawMessage) {
	if i := o.index(k); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// bytes encodes the object compactly, as encoding/json would.
func (o *orderedObject) bytes() []byte {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(o.vals[i])
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// setPath sets the value at a path of object keys in body, creating the
// objects on the way, and returns the new body. Every other member keeps its
// place and bytes.
func setPath(body []byte, path []string, v json.RawMessage) ([]byte, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	if len(path) == 1 {
		o.set(path[0], v)
		return o.bytes(), nil
	}
	inner, ok := o.get(path[0])
	if !ok || bytes.Equal(bytes.TrimSpace(inner), []byte("null")) {
		inner = json.RawMessage("{}")
	}
	nb, err := setPath(inner, path[1:], v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path[0], err)
	}
	o.set(path[0], nb)
	return o.bytes(), nil
}

// rawAt returns the raw value at a path of object keys.
func rawAt(body []byte, path ...string) (json.RawMessage, bool) {
	cur := json.RawMessage(body)
	for _, k := range path {
		o, err := parseObject(cur)
		if err != nil {
			return nil, false
		}
		v, ok := o.get(k)
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// marshalJSON encodes v like encoding/json (HTML escaping included, as
// ASO's client sends it).
func marshalJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// removePath deletes the member at a path of object keys, keeping every
// other member's place and bytes. A missing member is not an error.
func removePath(body []byte, path ...string) ([]byte, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	i := o.index(path[0])
	if i < 0 {
		return body, nil
	}
	if len(path) == 1 {
		o.keys = append(o.keys[:i], o.keys[i+1:]...)
		o.vals = append(o.vals[:i], o.vals[i+1:]...)
		return o.bytes(), nil
	}
	nb, err := removePath(o.vals[i], path[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path[0], err)
	}
	o.vals[i] = nb
	return o.bytes(), nil
}

// stringAt returns the string at a path of object keys ("" when absent or
// not a string).
func stringAt(body []byte, path ...string) string {
	raw, ok := rawAt(body, path...)
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
