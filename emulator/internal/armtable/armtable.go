// Package armtable turns the conformance table of how real Azure answered ASO's recorded sample tests
// (../shared/conformance/arm-responses.json) into per-type answers for the emulator: the status and
// long-running-operation style of a create, of an update and of a delete, most common answer first.
//
// Both the generator (emulator/gen, `make emulator-table`) and the emulator's drift test use Derive, so the
// committed table and a table derived afresh from the shared file are produced by the same rules.
package armtable

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Counted is one recorded answer and how often Azure gave it.
type Counted struct {
	Answer string // "201", "201+A", "202+AL", "202+L", "204", "404", …
	Count  int
}

// Type is the derived behaviour of one ARM resource type. Create and Update hold successful (2xx) answers only,
// most common first; Delete holds every recorded DELETE answer (most are 404: sent after the resource group had
// gone).
type Type struct {
	Type        string // ARM type as the table spells it
	Create      []Counted
	Update      []Counted
	Patch       []Counted // PATCHes recorded, else the supplement's (Count 0)
	Delete      []Counted
	APIVersions []string // most used first
}

// Source is the table's own description of where its counts come from.
type Source struct {
	Source    string
	Legend    string
	Cassettes int
}

type fileIn struct {
	Cassettes json.RawMessage                      `json:"cassettes"`
	Legend    string                               `json:"legend"`
	Source    string                               `json:"source"`
	Types     map[string]map[string]map[string]int `json:"types"`
}

// Derive reads arm-responses.json. A type's creates are the successful first PUTs plus, for each first PUT that
// failed (a 4xx a retry then got past), one successful later PUT, a 201 preferred (ARM answers 201 only to a create,
// role assignments excepted); the other successful later PUTs are updates. Answers of equal count are ordered by
// their text, descending ("201" before "200"). Every answer is checked to be well formed.
func Derive(data []byte) (map[string]*Type, Source, error) {
	var in fileIn
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, Source{}, fmt.Errorf("arm-responses.json: %w", err)
	}
	src := Source{Source: in.Source, Legend: in.Legend}
	var n int
	if err := json.Unmarshal(in.Cassettes, &n); err != nil {
		var list []json.RawMessage
		if err2 := json.Unmarshal(in.Cassettes, &list); err2 != nil {
			return nil, Source{}, fmt.Errorf("arm-responses.json: cassettes: %w", err)
		}
		n = len(list)
	}
	src.Cassettes = n
	if len(in.Types) == 0 {
		return nil, Source{}, fmt.Errorf("arm-responses.json: no types")
	}
	out := map[string]*Type{}
	for name, ops := range in.Types {
		key := strings.ToLower(name)
		if prev, ok := out[key]; ok {
			return nil, Source{}, fmt.Errorf("arm-responses.json: types %q and %q differ only in case", prev.Type, name)
		}
		t := &Type{Type: name}
		for op, counts := range ops {
			switch op {
			case "firstPUT", "laterPUT", "PATCH", "DELETE":
				for a := range counts {
					if _, err := Parse(a); err != nil {
						return nil, Source{}, fmt.Errorf("arm-responses.json: types.%s.%s: %w", name, op, err)
					}
				}
			case "apiVersions":
			default:
				return nil, Source{}, fmt.Errorf("arm-responses.json: types.%s: unknown key %q", name, op)
			}
		}
		failedFirst := 0
		creates := map[string]int{}
		for a, c := range ops["firstPUT"] {
			if isSuccess(a) {
				creates[a] += c
			} else {
				failedFirst += c
			}
		}
		var later []Counted
		for a, c := range ops["laterPUT"] {
			if isSuccess(a) {
				later = append(later, Counted{a, c})
			}
		}
		sort.Slice(later, func(i, j int) bool {
			ci, cj := strings.HasPrefix(later[i].Answer, "201"), strings.HasPrefix(later[j].Answer, "201")
			if ci != cj {
				return ci
			}
			return less(later[i], later[j])
		})
		updates := map[string]int{}
		for _, l := range later {
			asCreate := min(failedFirst, l.Count)
			failedFirst -= asCreate
			if asCreate > 0 {
				creates[l.Answer] += asCreate
			}
			if l.Count > asCreate {
				updates[l.Answer] += l.Count - asCreate
			}
		}
		patches := map[string]int{}
		for a, c := range ops["PATCH"] {
			if isSuccess(a) {
				patches[a] += c
			}
		}
		t.Create, t.Update, t.Patch = sorted(creates), sorted(updates), sorted(patches)
		t.Delete = sorted(ops["DELETE"])
		t.APIVersions = versions(ops["apiVersions"])
		out[key] = t
	}
	return out, src, nil
}

func isSuccess(a string) bool { return strings.HasPrefix(a, "2") }

func less(a, b Counted) bool {
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	return a.Answer > b.Answer
}

func sorted(m map[string]int) []Counted {
	var out []Counted
	for a, c := range m {
		out = append(out, Counted{a, c})
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func versions(m map[string]int) []string {
	var vs []Counted
	for v, c := range m {
		vs = append(vs, Counted{v, c})
	}
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].Count != vs[j].Count {
			return vs[i].Count > vs[j].Count
		}
		return vs[i].Answer > vs[j].Answer
	})
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Answer
	}
	return out
}

// Answer is a parsed answer: a status code and the polling headers the response carried.
type Answer struct {
	Status         int
	AsyncOperation bool // Azure-AsyncOperation
	Location       bool
}

// String renders the answer as the table writes it ("202+AL").
func (a Answer) String() string {
	s := strconv.Itoa(a.Status)
	if a.AsyncOperation || a.Location {
		s += "+"
		if a.AsyncOperation {
			s += "A"
		}
		if a.Location {
			s += "L"
		}
	}
	return s
}

// Parse reads an answer such as "201", "201+A", "202+AL" or "202+L".
func Parse(s string) (Answer, error) {
	code, hdrs, _ := strings.Cut(s, "+")
	st, err := strconv.Atoi(code)
	if err != nil || st < 100 || st > 599 {
		return Answer{}, fmt.Errorf("answer %q: the status is not an HTTP status code", s)
	}
	a := Answer{Status: st}
	if strings.Contains(s, "+") && hdrs == "" {
		return Answer{}, fmt.Errorf("answer %q: no header letters after '+'", s)
	}
	for _, c := range hdrs {
		switch c {
		case 'A':
			a.AsyncOperation = true
		case 'L':
			a.Location = true
		default:
			return Answer{}, fmt.Errorf("answer %q: unknown header letter %q (A: Azure-AsyncOperation, L: Location)", s, c)
		}
	}
	return a, nil
}

// Preference records that the shared replay sets moved an answer ahead of a more common one.
type Preference struct {
	Type, Op string
	Answer   string // now first
	Over     string // was first
	Sets     []string
}

// PreferRecordedSets reorders answers by ASO's shared replay sets (conformance/aso/*/*/expected.json): they are the
// newest recordings and the ones the emulator must replay exactly. Where every set that created a type saw one
// status and the table's most common create has another status, the table's most common answer with the sets'
// status goes first (Azure changed its answer between api-versions: the counts also hold older cassettes). Sets
// that disagree with each other change nothing. It returns what it moved, in type order.
func PreferRecordedSets(types map[string]*Type, sets map[string][]byte) ([]Preference, error) {
	type seen struct {
		statuses map[int]bool
		sets     []string
	}
	creates := map[string]*seen{}
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var set struct {
			Resources []struct {
				Path           string `json:"path"`
				PutStatusCodes []int  `json:"putStatusCodes"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(sets[n], &set); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		for _, r := range set.Resources {
			st := 0
			for _, c := range r.PutStatusCodes {
				if c >= 200 && c < 300 {
					st = c
					break
				}
			}
			if st == 0 {
				continue
			}
			k := strings.ToLower(TypeOfPath(r.Path))
			s := creates[k]
			if s == nil {
				s = &seen{statuses: map[int]bool{}}
				creates[k] = s
			}
			s.statuses[st] = true
			if len(s.sets) == 0 || s.sets[len(s.sets)-1] != n {
				s.sets = append(s.sets, n)
			}
		}
	}
	keys := make([]string, 0, len(creates))
	for k := range creates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Preference
	for _, k := range keys {
		s, t := creates[k], types[k]
		if t == nil || len(s.statuses) != 1 || len(t.Create) == 0 {
			continue
		}
		var want int
		for st := range s.statuses {
			want = st
		}
		if first, _ := Parse(t.Create[0].Answer); first.Status == want {
			continue
		}
		for i, c := range t.Create {
			if a, _ := Parse(c.Answer); a.Status == want {
				out = append(out, Preference{Type: t.Type, Op: "create", Answer: c.Answer, Over: t.Create[0].Answer, Sets: s.sets})
				moved := append([]Counted{c}, t.Create[:i]...)
				t.Create = append(moved, t.Create[i+1:]...)
				break
			}
		}
	}
	return out, nil
}

// TypeOfPath returns the ARM type of a request path ("Microsoft.Storage/storageAccounts/blobServices").
func TypeOfPath(p string) string {
	p, _, _ = strings.Cut(p, "?")
	i := strings.LastIndex(strings.ToLower(p), "/providers/")
	if i < 0 {
		return "Microsoft.Resources/resourceGroups"
	}
	segs := strings.Split(strings.Trim(p[i+len("/providers/"):], "/"), "/")
	out := segs[0]
	for j := 1; j < len(segs); j += 2 {
		out += "/" + segs[j]
	}
	return out
}

// SupplementEntry is an answer the recordings lack (ASO's tests never PATCH, and their DELETEs came after the
// resource group had gone), taken from another source that each entry names.
type SupplementEntry struct {
	Type   string `json:"type"`
	Op     string `json:"op"` // "patch" or "delete"
	Answer string `json:"answer"`
	Source string `json:"source"`
}

// ApplySupplement adds supplement answers (count 0) where the recordings hold no answer of that operation to an
// existing resource: a recorded answer always wins.
func ApplySupplement(types map[string]*Type, data []byte) ([]SupplementEntry, error) {
	var entries []SupplementEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("supplement: %w", err)
	}
	var applied []SupplementEntry
	for i, s := range entries {
		if _, err := Parse(s.Answer); err != nil || !isSuccess(s.Answer) {
			return nil, fmt.Errorf("supplement[%d] (%s %s): answer %q is not a successful answer", i, s.Type, s.Op, s.Answer)
		}
		if s.Source == "" {
			return nil, fmt.Errorf("supplement[%d] (%s %s): no source", i, s.Type, s.Op)
		}
		t := types[strings.ToLower(s.Type)]
		if t == nil {
			return nil, fmt.Errorf("supplement[%d]: type %q is not in the table", i, s.Type)
		}
		switch s.Op {
		case "patch":
			if len(t.Patch) == 0 {
				t.Patch = []Counted{{s.Answer, 0}}
				applied = append(applied, s)
			}
		case "delete":
			recorded := false
			for _, d := range t.Delete {
				if a, _ := Parse(d.Answer); a.Status < 300 && a.Status != 204 {
					recorded = true
				}
			}
			if !recorded {
				t.Delete = append([]Counted{{s.Answer, 0}}, t.Delete...)
				applied = append(applied, s)
			}
		default:
			return nil, fmt.Errorf("supplement[%d] (%s): op %q is not patch or delete", i, s.Type, s.Op)
		}
	}
	return applied, nil
}
