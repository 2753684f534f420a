package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// decode parses JSON keeping numbers exact.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// escapePointer escapes one JSON pointer token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func splitPointer(p string) []string {
	if p == "" || p == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// setPointer replaces the value at a JSON pointer in a decoded document.
func setPointer(doc any, p string, v any) {
	parts := splitPointer(p)
	if len(parts) == 0 {
		return
	}
	cur := doc
	for i, t := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if _, ok := c[t]; ok {
					c[t] = v
				}
				return
			}
			cur = c[t]
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(c) {
				return
			}
			if last {
				c[idx] = v
				return
			}
			cur = c[idx]
		default:
			return
		}
	}
}

// redact returns body with every pointer in secrets replaced by Redacted. The
// bytes are returned unchanged when there is nothing to redact, so the plan
// shows the exact request.
func redact(body []byte, secrets []string) (json.RawMessage, error) {
	if len(secrets) == 0 {
		return json.RawMessage(body), nil
	}
	doc, err := decode(body)
	if err != nil {
		return nil, err
	}
	for _, p := range secrets {
		setPointer(doc, p, Redacted)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// diffFull lists every difference between two documents (last applied vs
// desired), including removed fields.
func diffFull(before, after any, path string, out *[]Change) {
	switch a := after.(type) {
	case map[string]any:
		b, ok := before.(map[string]any)
		if !ok {
			*out = append(*out, change(path, before, after))
			return
		}
		keys := unionKeys(a, b)
		for _, k := range keys {
			av, aok := a[k]
			bv, bok := b[k]
			p := path + "/" + escapePointer(k)
			switch {
			case aok && !bok:
				*out = append(*out, Change{Path: p, Op: "add", After: av})
			case !aok && bok:
				*out = append(*out, Change{Path: p, Op: "remove", Before: bv})
			default:
				diffFull(bv, av, p, out)
			}
		}
	case []any:
		b, ok := before.([]any)
		if !ok || len(b) != len(a) {
			*out = append(*out, change(path, before, after))
			return
		}
		for i := range a {
			diffFull(b[i], a[i], path+"/"+strconv.Itoa(i), out)
		}
	default:
		if !scalarEqual(path, before, after) {
			*out = append(*out, change(path, before, after))
		}
	}
}

func change(path string, before, after any) Change {
	if before == nil {
		return Change{Path: path, Op: "add", After: after}
	}
	return Change{Path: path, Op: "replace", Before: before, After: after}
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// diffSubset compares only what the desired document sets against what ARM
// returned (ARM adds defaults and read-only fields), skipping the pointers in
// skip (secrets, which ARM never returns, and values known after apply).
// Strings that differ only in case are not drift, except tag values: ARM
// treats enum values case-insensitively and resource providers normalise
// them ("customRole" comes back as "CustomRole").
func diffSubset(observed, desired any, path string, skip map[string]bool, out *[]Change) {
	if skip[path] {
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			if len(d) == 0 && observed == nil {
				return
			}
			*out = append(*out, change(path, observed, desired))
			return
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			diffSubset(lookupFold(o, k), d[k], path+"/"+escapePointer(k), skip, out)
		}
	case []any:
		o, ok := observed.([]any)
		if !ok {
			if len(d) == 0 && observed == nil {
				return
			}
			*out = append(*out, change(path, observed, desired))
			return
		}
		if len(o) != len(d) {
			*out = append(*out, change(path, observed, desired))
			return
		}
		for i := range d {
			diffSubset(o[i], d[i], path+"/"+strconv.Itoa(i), skip, out)
		}
	case nil:
		// An explicit null asks for "unset"; ARM reports it as absent or null,
		// or fills a default we cannot know: not a difference.
	default:
		if !scalarEqual(path, observed, desired) && !caseOnly(path, observed, desired) {
			*out = append(*out, change(path, observed, desired))
		}
	}
}

func caseOnly(path string, a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	return ok1 && ok2 && !strings.HasPrefix(path, "/tags/") && strings.EqualFold(as, bs)
}

// lookupFold finds a key, falling back to a case-insensitive match (ARM is
// not consistent about the casing of property names it returns).
func lookupFold(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v
		}
	}
	return nil
}

// scalarEqual compares leaves: numbers by value, ARM IDs, locations and
// enum-like values case-insensitively as ARM treats them.
func scalarEqual(path string, a, b any) bool {
	switch bv := b.(type) {
	case string:
		av, ok := a.(string)
		if !ok {
			return false
		}
		if av == bv {
			return true
		}
		last := path[strings.LastIndex(path, "/")+1:]
		if strings.EqualFold(last, "location") {
			return normLocation(av) == normLocation(bv)
		}
		if strings.HasPrefix(bv, "/subscriptions/") || strings.HasPrefix(bv, "/providers/") || strings.HasSuffix(strings.ToLower(last), "id") {
			return strings.EqualFold(av, bv)
		}
		return false
	case json.Number:
		return numEqual(a, bv)
	case float64, int64, int:
		return numEqual(a, json.Number(fmt.Sprint(bv)))
	default:
		return fmt.Sprint(a) == fmt.Sprint(b) && (a == nil) == (b == nil)
	}
}

func numEqual(a any, b json.Number) bool {
	var as string
	switch av := a.(type) {
	case json.Number:
		as = string(av)
	case float64, int64, int:
		as = fmt.Sprint(av)
	default:
		return false
	}
	if as == string(b) {
		return true
	}
	af, err1 := strconv.ParseFloat(as, 64)
	bf, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && af == bf
}

func normLocation(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, " ", ""))
}

// ValuesAt returns the string values found at the given JSON pointers of a
// body (the secret values the executor must keep out of error messages).
func ValuesAt(body []byte, pointers []string) []string {
	if len(pointers) == 0 {
		return nil
	}
	doc, err := decode(body)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range pointers {
		cur := doc
		for _, t := range splitPointer(p) {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[t]
			case []any:
				i, err := strconv.Atoi(t)
				if err != nil || i < 0 || i >= len(c) {
					cur = nil
				} else {
					cur = c[i]
				}
			default:
				cur = nil
			}
		}
		if s, ok := cur.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}
