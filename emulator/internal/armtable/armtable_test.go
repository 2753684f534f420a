package armtable

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDerive(t *testing.T) {
	data := []byte(`{"cassettes": 3, "source": "test", "legend": "l", "types": {
	  "A.B/one": {"firstPUT": {"201+L": 32, "200": 1}, "laterPUT": {"200": 32}, "DELETE": {"404": 3}, "apiVersions": {"2023-01-31": 5, "2018-11-30": 9}},
	  "A.B/retried": {"firstPUT": {"400": 2, "201+A": 1}, "laterPUT": {"200": 3, "201+A": 1}},
	  "A.B/tie": {"firstPUT": {"200": 1, "201": 1}},
	  "A.B/failedonly": {"firstPUT": {"409": 2}},
	  "A.B/poll": {"apiVersions": {"2020-01-01": 1}}
	}}`)
	types, src, err := Derive(data)
	if err != nil {
		t.Fatal(err)
	}
	if src.Cassettes != 3 || src.Source != "test" {
		t.Errorf("source %+v", src)
	}
	want := map[string]*Type{
		"a.b/one": {Type: "A.B/one", Create: []Counted{{"201+L", 32}, {"200", 1}}, Update: []Counted{{"200", 32}},
			Delete: []Counted{{"404", 3}}, APIVersions: []string{"2018-11-30", "2023-01-31"}},
		// two failed first PUTs: the later 201 and one later 200 were creates, the other two 200s updates.
		"a.b/retried":    {Type: "A.B/retried", Create: []Counted{{"201+A", 2}, {"200", 1}}, Update: []Counted{{"200", 2}}, APIVersions: []string{}},
		"a.b/tie":        {Type: "A.B/tie", Create: []Counted{{"201", 1}, {"200", 1}}, APIVersions: []string{}},
		"a.b/failedonly": {Type: "A.B/failedonly", APIVersions: []string{}},
		"a.b/poll":       {Type: "A.B/poll", APIVersions: []string{"2020-01-01"}},
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`{"types": {"A/b": {"firstPUT": {"20x": 1}}}}`,
		`{"types": {"A/b": {"firstPUT": {"201+Q": 1}}}}`,
		`{"types": {"A/b": {"GETs": {"200": 1}}}}`,
		`{"types": {"A/b": {}, "a/B": {}}}`,
		`{"types": {}}`,
	} {
		if _, _, err := Derive([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestPreferRecordedSets(t *testing.T) {
	types := map[string]*Type{
		"x.y/ns":  {Type: "X.Y/ns", Create: []Counted{{"200", 6}, {"201+AL", 1}}},
		"x.y/uai": {Type: "X.Y/uai", Create: []Counted{{"201+L", 32}, {"200", 1}}},
	}
	set := func(path string, codes string) []byte {
		return []byte(`{"resources": [{"path": "/subscriptions/0/resourceGroups/rg/providers/` + path + `?api-version=1", "putStatusCodes": ` + codes + `}]}`)
	}
	prefs, err := PreferRecordedSets(types, map[string][]byte{
		"a/v1": set("X.Y/ns/n", "[429, 201]"),
		"b/v1": set("X.Y/uai/u", "[200]"), // the sets disagree on uai: nothing moves
		"c/v1": set("X.Y/uai/u", "[201]"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(prefs) != 1 || prefs[0].Type != "X.Y/ns" || prefs[0].Answer != "201+AL" || prefs[0].Over != "200" || strings.Join(prefs[0].Sets, ",") != "a/v1" {
		t.Errorf("preferences %+v", prefs)
	}
	if types["x.y/ns"].Create[0].Answer != "201+AL" || types["x.y/uai"].Create[0].Answer != "201+L" {
		t.Errorf("order: %v %v", types["x.y/ns"].Create, types["x.y/uai"].Create)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Answer{"201": {Status: 201}, "202+AL": {Status: 202, AsyncOperation: true, Location: true}, "201+L": {Status: 201, Location: true}} {
		got, err := Parse(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("Parse(%q) = %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "abc", "201+", "99", "201+AX"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
