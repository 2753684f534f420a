package anchor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gitaso/gitaso/emulator"
)

// writeLog collects an emulator's write log (emulator.WithWriteLog).
type writeLog struct {
	mu   sync.Mutex
	recs []emulator.WriteRecord
}

func (l *writeLog) add(r emulator.WriteRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

func (l *writeLog) records() []emulator.WriteRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]emulator.WriteRecord(nil), l.recs...)
}

// Diff is one difference the oracle found.
type Diff struct {
	Resource string `json:"resource"` // lower-cased ARM ID
	What     string `json:"what"`     // "put-body", "final-body", "only-aso", "only-gitaso", "put-api-version"
	Field    string `json:"field,omitempty"`
	ASO      string `json:"aso,omitempty"`
	Gitaso   string `json:"gitaso,omitempty"`
}

// Oracle is the comparison of what two emulators received and ended with.
type Oracle struct {
	PUTResources    int      `json:"putResources"`    // resources PUT by either side
	PUTMatched      int      `json:"putMatched"`      // last accepted PUT bodies equal
	FinalResources  int      `json:"finalResources"`  // resources stored by either side
	FinalMatched    int      `json:"finalMatched"`    // final bodies equal (volatile values aside)
	MatchedTypes    []string `json:"matchedTypes"`    // ARM types whose every resource matched, PUT and final
	MismatchedTypes []string `json:"mismatchedTypes"` // ARM types with a difference
	Diffs           []Diff   `json:"diffs"`
}

// lastPuts returns, per lower-cased path, the last PUT a side sent that the emulator accepted (2xx), and the
// api-versions used.
func lastPuts(recs []emulator.WriteRecord) map[string]emulator.WriteRecord {
	out := map[string]emulator.WriteRecord{}
	for _, r := range recs {
		if r.Method != "PUT" || r.Status < 200 || r.Status > 299 {
			continue
		}
		out[strings.ToLower(r.Path)] = r
	}
	return out
}

// compare builds the oracle from both sides' write logs and final stores.
func compare(asoLog, gitasoLog []emulator.WriteRecord, asoFinal, gitasoFinal []emulator.StoredResource) Oracle {
	var o Oracle
	bad := map[string]bool{}  // types with a difference
	seen := map[string]bool{} // types seen
	typeOf := func(id string) string { return armType(id) }
	ap, gp := lastPuts(asoLog), lastPuts(gitasoLog)
	for _, k := range unionKeys(ap, gp) {
		o.PUTResources++
		t := typeOf(k)
		seen[t] = true
		a, aok := ap[k]
		g, gok := gp[k]
		switch {
		case !aok:
			o.Diffs = append(o.Diffs, Diff{Resource: k, What: "only-gitaso", Gitaso: "PUT " + g.APIVersion})
			bad[t] = true
			continue
		case !gok:
			o.Diffs = append(o.Diffs, Diff{Resource: k, What: "only-aso", ASO: "PUT " + a.APIVersion})
			bad[t] = true
			continue
		}
		ok := true
		if a.APIVersion != g.APIVersion {
			o.Diffs = append(o.Diffs, Diff{Resource: k, What: "put-api-version", ASO: a.APIVersion, Gitaso: g.APIVersion})
			ok = false
		}
		for _, d := range diffJSON(decode(a.Body), decode(g.Body), "", false) {
			d.Resource, d.What = k, "put-body"
			o.Diffs = append(o.Diffs, d)
			ok = false
		}
		if ok {
			o.PUTMatched++
		} else {
			bad[t] = true
		}
	}
	af, gf := map[string]emulator.StoredResource{}, map[string]emulator.StoredResource{}
	for _, r := range asoFinal {
		af[strings.ToLower(r.ID)] = r
	}
	for _, r := range gitasoFinal {
		gf[strings.ToLower(r.ID)] = r
	}
	pairEmulatorCreated(af, gf, ap, gp)
	for _, k := range unionKeys(af, gf) {
		o.FinalResources++
		t := typeOf(k)
		seen[t] = true
		a, aok := af[k]
		g, gok := gf[k]
		switch {
		case !aok:
			o.Diffs = append(o.Diffs, Diff{Resource: k, What: "only-gitaso", Gitaso: "stored"})
			bad[t] = true
			continue
		case !gok:
			o.Diffs = append(o.Diffs, Diff{Resource: k, What: "only-aso", ASO: "stored"})
			bad[t] = true
			continue
		}
		ds := diffJSON(decode(a.Body), decode(g.Body), "", true)
		for _, d := range ds {
			d.Resource, d.What = k, "final-body"
			o.Diffs = append(o.Diffs, d)
		}
		if len(ds) == 0 {
			o.FinalMatched++
		} else {
			bad[t] = true
		}
	}
	for t := range seen {
		if bad[t] {
			o.MismatchedTypes = append(o.MismatchedTypes, t)
		} else {
			o.MatchedTypes = append(o.MatchedTypes, t)
		}
	}
	sort.Strings(o.MatchedTypes)
	sort.Strings(o.MismatchedTypes)
	return o
}

// pairEmulatorCreated files under ASO's key every resource of gitaso's final store that neither side PUT (the
// emulator created it, as Azure creates a private endpoint's network interface {endpoint}.nic.{guid}) and whose
// ID equals, GUIDs masked, exactly one such resource of ASO's store: each emulator names those with GUIDs of its
// own, so their IDs differ though neither client chose them. Resources a client PUT keep their exact IDs (a
// client-chosen name, such as a role assignment's UUIDv5, must be equal).
func pairEmulatorCreated(af, gf map[string]emulator.StoredResource, ap, gp map[string]emulator.WriteRecord) {
	created := func(k string) bool {
		_, a := ap[k]
		_, g := gp[k]
		return !a && !g
	}
	asoOnly := map[string][]string{} // masked ID -> ASO's keys stored only there, created by the emulator
	for k := range af {
		if _, ok := gf[k]; !ok && created(k) {
			m := maskGUIDs(k)
			asoOnly[m] = append(asoOnly[m], k)
		}
	}
	gitasoOnly := map[string][]string{}
	for k := range gf {
		if _, ok := af[k]; !ok && created(k) {
			m := maskGUIDs(k)
			gitasoOnly[m] = append(gitasoOnly[m], k)
		}
	}
	for m, gks := range gitasoOnly {
		aks := asoOnly[m]
		if len(gks) != 1 || len(aks) != 1 || m == gks[0] {
			continue
		}
		gf[aks[0]] = gf[gks[0]]
		delete(gf, gks[0])
	}
}

var guidInRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// maskGUIDs replaces every GUID in s by one placeholder.
func maskGUIDs(s string) string { return guidInRE.ReplaceAllString(s, "<guid>") }

func unionKeys[V any](a, b map[string]V) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// armType returns the lower-cased ARM type of an ID, e.g. microsoft.servicebus/namespaces/queues
// ("resourcegroups" for a resource group, "subscription" for a subscription).
func armType(id string) string {
	segs := strings.Split(strings.Trim(strings.ToLower(id), "/"), "/")
	prov := -1
	for i, s := range segs {
		if s == "providers" && i+1 < len(segs) {
			prov = i
		}
	}
	if prov < 0 {
		if len(segs) >= 4 && segs[2] == "resourcegroups" {
			return "resourcegroups"
		}
		return "subscription"
	}
	t := []string{segs[prov+1]}
	for i := prov + 2; i < len(segs); i += 2 {
		t = append(t, segs[i])
	}
	return strings.Join(t, "/")
}

func decode(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	return v
}

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`)
)

// volatile reports whether two differing values are ones each emulator generates for itself (GUIDs of
// identities and operations, timestamps, etags, keys), which are not a client's doing.
func volatile(path string, a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return false
	}
	switch {
	case uuidRE.MatchString(as) && uuidRE.MatchString(bs):
		return true
	case timeRE.MatchString(as) && timeRE.MatchString(bs):
		return true
	}
	last := path[strings.LastIndexByte(path, '.')+1:]
	switch strings.ToLower(last) {
	case "etag", "primarykey", "secondarykey", "primaryconnectionstring", "secondaryconnectionstring", "clientsecreturl",
		"fullyqualifieddomainname", "hostname", "serviceBusEndpoint":
		return true
	}
	return false
}

// diffJSON returns the differences between two JSON values, by dotted path; values that differ only as
// volatile ones do are not differences. systemData is skipped (each emulator stamps its own). With stored set
// (final bodies, whose client-sent part the PUT comparison already checked), two strings that differ only in the
// GUIDs inside them are equal too: IDs of resources the emulator created and named itself (a private endpoint's
// networkInterfaces[].id).
func diffJSON(a, b any, path string, stored bool) []Diff {
	if strings.HasSuffix(path, ".systemData") || path == "systemData" {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []Diff
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				if p == "systemData" {
					continue
				}
				out = append(out, Diff{Field: p, ASO: "(absent)", Gitaso: short(bv)})
			case !bin:
				if p == "systemData" {
					continue
				}
				out = append(out, Diff{Field: p, ASO: short(av), Gitaso: "(absent)"})
			default:
				out = append(out, diffJSON(av, bv, p, stored)...)
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []Diff
		for i := range al {
			out = append(out, diffJSON(al[i], bl[i], fmt.Sprintf("%s[%d]", path, i), stored)...)
		}
		return out
	}
	if equalJSON(a, b) || volatile(path, a, b) || stored && equalMaskedGUIDs(a, b) {
		return nil
	}
	return []Diff{{Field: path, ASO: short(a), Gitaso: short(b)}}
}

// equalMaskedGUIDs reports whether a and b are strings that are equal with their GUIDs masked.
func equalMaskedGUIDs(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	return aok && bok && maskGUIDs(as) == maskGUIDs(bs)
}

func equalJSON(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) == string(bb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
