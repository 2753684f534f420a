package asosrc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An API package in the layout before v2.11.0 (testdata/releases/legacy, a
// made-up widget.azure.com written in that layout) gives the facts the
// current layout would: ARM types named without _ARM, the api-version from
// string(APIVersion_Value), the enum declared in the ARM file, a required
// secret looked up without a nil check, a list sent empty when unset
// (golden: testdata/releases/legacy-widget.json, GITASO_UPDATE=1 rewrites it).
func TestLegacySchema(t *testing.T) {
	root := filepath.Join("testdata", "releases", "legacy")
	if !IsLegacyLayout(root, "widget.azure.com", "v1beta20200101") {
		t.Fatal("legacy layout not recognised")
	}
	s, err := Schema(root, "widget.azure.com", "v1beta20200101")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "releases", "legacy-widget.json")
	if os.Getenv("GITASO_UPDATE") != "" {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("facts\n got %s\nwant %s", got, want)
	}
}

// widgetFacts is the legacy widget's facts as the current layout names
// them (what a v1api… package of the same API version would hold).
func widgetFacts(t *testing.T) *SchemaFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "releases", "legacy-widget.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSchemaFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SameConversion accepts what converts an old manifest the same (renamed
// types, new optional fields, more enum values, read-only ARM fields gone)
// and names the first difference of what does not.
func TestSameConversion(t *testing.T) {
	cases := []struct {
		name string
		edit func(cur *SchemaFile)
		want string
	}{
		{"identical", func(*SchemaFile) {}, ""},
		{"types renamed", func(c *SchemaFile) {
			c.Kinds[0].Spec = "Widgets_Spec"
			c.Types[0].Name = "Widgets_Spec"
		}, ""},
		{"new optional field", func(c *SchemaFile) {
			c.Types[0].Fields = append(c.Types[0].Fields, &Field{JSON: "color", T: "string", A: "/properties/color"})
			arm := c.ARMTypes[1]
			arm.Fields = append(arm.Fields, ARMField{JSON: "color"})
		}, ""},
		{"more enum values", func(c *SchemaFile) { field(c, "size").E = append(field(c, "size").E, []byte(`"Medium"`)) }, ""},
		{"required no longer", func(c *SchemaFile) { field(c, "location").Req = false }, ""},
		{"api-version", func(c *SchemaFile) { c.APIVersion = "2021-01-01" }, "api-version 2020-01-01 vs 2021-01-01"},
		{"ARM path moved", func(c *SchemaFile) { field(c, "size").A = "/size" }, `Widget_Spec: field size: ARM path "/properties/size" vs "/size"`},
		{"enum value gone", func(c *SchemaFile) { field(c, "size").E = field(c, "size").E[:1] }, `Widget_Spec: field size: enum value "Small" gone`},
		{"a string now an enum", func(c *SchemaFile) { f := field(c, "zones"); f.T, f.E = "enum", nil }, "Widget_Spec: field zones: kind string vs enum"},
		{"new required field", func(c *SchemaFile) {
			c.Types[0].Fields = append(c.Types[0].Fields, &Field{JSON: "color", T: "string", Req: true, A: "/properties/color"})
		}, "Widget_Spec: field color is new and required"},
		{"new field sent unset", func(c *SchemaFile) {
			c.ARMTypes[1].Fields = append(c.ARMTypes[1].Fields, ARMField{JSON: "color", Flags: "Ln"})
		}, `ARM WidgetProperties: new field color is sent unset (flags "Ln")`},
		{"explicit empty no more", func(c *SchemaFile) { c.Types[0].EmptyIfNil = nil }, "Widget_Spec: emptyIfNil [/properties/zones] vs []"},
		{"ARM field order", func(c *SchemaFile) {
			f := c.ARMTypes[1].Fields
			f[0], f[1] = f[1], f[0]
		}, "ARM WidgetProperties: field password out of order"},
		{"field gone", func(c *SchemaFile) { c.Types[0].Fields = c.Types[0].Fields[1:] }, "Widget_Spec: field azureName missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := widgetFacts(t)
			sortWidget(cur)
			c.edit(cur)
			if got := SameConversion(widgetFacts(t), cur); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// sortWidget puts the decoded facts in a known order: the spec type first,
// then the ARM types by name (Widget_Spec, WidgetProperties), fields by name.
func sortWidget(s *SchemaFile) {
	slices.SortFunc(s.ARMTypes, func(a, b *ARMType) int { return -strings.Compare(a.Name, b.Name) })
	for _, tp := range s.Types {
		slices.SortFunc(tp.Fields, func(a, b *Field) int { return strings.Compare(a.JSON, b.JSON) })
	}
}

func field(s *SchemaFile, name string) *Field {
	for _, f := range s.Types[0].Fields {
		if f.JSON == name {
			return f
		}
	}
	panic("no field " + name)
}

// A collection a release before v2.10.0 marked explicitEmptyCollection on
// the spec side only is sent empty when unset (ARM flag e): what ASO v2.8.0
// sent for a ManagedCluster's nodeLabels, nodeTaints and tags.
func TestSpecExplicitEmpty(t *testing.T) {
	root := filepath.Join("testdata", "releases", "legacy")
	s, err := Schema(root, "widget.azure.com", "v1beta20200101")
	if err != nil {
		t.Fatal(err)
	}
	marked, err := SpecExplicitEmpty(root, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(marked, []string{"WidgetProperties.labels"}) {
		t.Errorf("marked %v, want [WidgetProperties.labels]", marked)
	}
	for _, at := range s.ARMTypes {
		for _, f := range at.Fields {
			if want := at.Name == "WidgetProperties" && f.JSON == "labels"; strings.Contains(f.Flags, "e") != want {
				t.Errorf("%s.%s flags %q", at.Name, f.JSON, f.Flags)
			}
		}
	}
}
