package asosrc

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite the golden files under testdata/schema/want")

const schemaTestTree = "testdata/schema"

// TestSchemaGolden extracts the made-up package testdata/schema/v2/api/widget
// and compares schema file and exceptions with the golden files, which were
// reviewed by hand (see TestSchemaFacts for the facts spelled out).
func TestSchemaGolden(t *testing.T) {
	s, err := Schema(schemaTestTree, "widget.azure.com", "v1api20240101")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Exceptions([]*SchemaFile{s}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	schemaGolden(t, filepath.Join(schemaTestTree, "want", "schema", "widget.azure.com", "v1api20240101.json"), append(got, '\n'))
	schemaGolden(t, filepath.Join(schemaTestTree, "want", "exceptions.json"), append(ex, '\n'))
}

// TestSchemaBeforeV211 reads the layout ASO generated before v2.11, ARM
// payload types named X_ARM beside the Kubernetes types, with the same names
// for ARM types as the arm subpackage has since.
func TestSchemaBeforeV211(t *testing.T) {
	s, err := Schema(schemaTestTree, "widget.azure.com", "v1beta20210101")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	schemaGolden(t, filepath.Join(schemaTestTree, "want", "schema", "widget.azure.com", "v1beta20210101.json"), append(got, '\n'))
}

func schemaGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateSchema {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got  %s\n want %s", path, got, want)
	}
}

// TestSchemaFacts spells out, on the made-up package, each kind of fact the
// extractor reads from ASO's source.
func TestSchemaFacts(t *testing.T) {
	s, err := Schema(schemaTestTree, "widget.azure.com", "v1api20240101")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]*Type{}
	for _, ty := range s.Types {
		types[ty.Name] = ty
	}
	field := func(typ, name string) *Field {
		t.Helper()
		ty := types[typ]
		if ty == nil {
			t.Fatalf("type %s missing", typ)
		}
		for _, f := range ty.Fields {
			if f.JSON == name {
				return f
			}
		}
		t.Fatalf("field %s.%s missing", typ, name)
		return nil
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("api-version", s.APIVersion, "2024-01-01")
	check("kinds", fmt.Sprint(s.Kinds), "[{Gadget Gadget_Spec Microsoft.Widget/gadgets} {Sprocket Sprocket_Spec Microsoft.Widget/sprockets}]")
	check("type order", fmt.Sprint(typeNames(s.Types)), "[Gadget_Spec Sprocket_Spec Rule ManagedServiceIdentity GadgetOperatorSpec RoundSprocket MatchRule RedirectRule UserAssignedIdentityDetails GadgetOperatorSecrets]")
	g := types["Gadget_Spec"]
	check("Gadget arm", g.ARM, "Gadget_Spec")
	check("Gadget name", g.NameAt, "/name")
	check("nesting", field("Gadget_Spec", "weight").A, "/properties/weight")
	check("rename from the json tag", field("Gadget_Spec", "ruleconditions").A, "/properties/conditions")
	check("reference", field("Gadget_Spec", "subnetReference").A+" "+field("Gadget_Spec", "subnetReference").ARMRef, "/properties/subnetId SubnetId")
	check("secret", field("Gadget_Spec", "password").T, "secretRef")
	check("configmap pair", field("Gadget_Spec", "hostNameFromConfig").T+" "+field("Gadget_Spec", "hostNameFromConfig").Pair, "configMapRef HostName")
	check("precedence", fmt.Sprint(g.Prec), "[{/properties/hostName [hostNameFromConfig hostName]} {/properties/vaultId [vaultReference vaultId]}]")
	check("explicit empty", fmt.Sprint(g.EmptyIfNil), "[/labels]")
	check("container triggers that differ", fmt.Sprint(g.Ctr != nil), "true")
	check("named list through a temporary", field("Gadget_Spec", "certificates").C+" "+field("Gadget_Spec", "certificates").A, "list /properties/certificates")
	check("int enum", field("Gadget_Spec", "level").T+" "+fmt.Sprint(len(field("Gadget_Spec", "level").E)), "int 3")
	check("field enum marker", field("GadgetOperatorSpec", "namingConvention").T+" "+string(field("GadgetOperatorSpec", "namingConvention").E[1]), `string "stable"`)
	check("required", fmt.Sprint(field("Gadget_Spec", "location").Req), "true")
	check("owner", field("Gadget_Spec", "owner").X+" "+field("Gadget_Spec", "owner").OwnerKind, "owner resources.azure.com/ResourceGroup")
	check("refKeyMap", field("ManagedServiceIdentity", "userAssignedIdentities").Conv, "refKeyMap")
	check("wellKnown", field("RoundSprocket", "admins").Conv+" "+field("RoundSprocket", "admins").C, "wellKnown list")
	check("nested collection", field("RoundSprocket", "teeth").C, "map.list")
	check("one-of type", fmt.Sprint(types["Rule"].OneOf), "true")
	check("push name", fmt.Sprint(types["Sprocket_Spec"].PushName), "[/roundSprocket/name]")
	arm := map[string]*ARMType{}
	for _, at := range s.ARMTypes {
		arm[at.Name] = at
	}
	check("one-of in MarshalJSON order", fmt.Sprint(arm["Rule"].OneOf), "&{kind [[redirect Redirect] [match Match]]}")
	check("flags", fmt.Sprint(arm["GadgetProperties"].Fields[0], arm["Gadget_Spec"].Fields[1], arm["RoundSprocket"].Fields[3], arm["Sprocket_Spec"].Fields[0]),
		"{certificates  Ln} {labels  Mne} {name  x} {name  p}")
	if _, ok := arm["Gadget_STATUS"]; ok {
		t.Error("status payload types were read")
	}
}

func typeNames(ts []*Type) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestSchemaErrors: source the extractor does not understand is an error
// naming the package, type and field or statement, never a silent guess.
func TestSchemaErrors(t *testing.T) {
	cases := []struct {
		name, k8s, arm, want string
	}{
		{
			name: "write to an unknown ARM field",
			k8s: `func (w *W_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	result := &arm.W_Spec{}
	if w.Size != nil {
		result.Nope = w.Size
	}
	return result, nil
}`,
			want: "w_types_gen.go:12:2: arm type W_Spec has no field Nope",
		},
		{
			name: "unknown runtime type",
			want: "type W_Spec field Size: unknown type genruntime.Mystery",
		},
		{
			name: "spec field not written",
			k8s: `func (w *W_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	result := &arm.W_Spec{}
	return result, nil
}`,
			want: "type W_Spec field size: ConvertToARM writes it nowhere",
		},
		{
			name: "one-of without discriminator",
			k8s: `func (w *W_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	result := &arm.W_Spec{}
	if w.Size != nil {
		result.Size = w.Size
	}
	return result, nil
}`,
			arm: `func (w W_Spec) MarshalJSON() ([]byte, error) {
	if w.Size != nil {
		return json.Marshal(w.Size)
	}
	return nil, nil
}
func (w *W_Spec) UnmarshalJSON(data []byte) error { return nil }`,
			want: "arm type W_Spec: one-of without discriminator",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "v2", "api", "widget", "v1")
			sizeType := "*string"
			if c.name == "unknown runtime type" {
				sizeType = "*genruntime.Mystery"
			}
			writeSchemaFile(t, filepath.Join(dir, "w_types_gen.go"), `package v1
type W struct {
	Spec W_Spec `+"`json:\"spec,omitempty\"`"+`
}
func (w *W) GetType() string { return "Microsoft.Widget/ws" }
func (w W) GetAPIVersion() string { return "2024-01-01" }
type W_Spec struct {
	Size `+sizeType+" `json:\"size,omitempty\"`"+`
}
`+c.k8s)
			writeSchemaFile(t, filepath.Join(dir, "arm", "w_spec_types_gen.go"), `package arm
type W_Spec struct {
	Size *string `+"`json:\"size,omitempty\"`"+`
}
`+c.arm)
			_, err := Schema(root, "widget.azure.com", "v1")
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func writeSchemaFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPackages(t *testing.T) {
	got, err := Packages(schemaTestTree)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[[widget.azure.com v1api20240101] [widget.azure.com v1beta20210101]]" {
		t.Errorf("Packages = %v", got)
	}
	if _, err := Packages(t.TempDir()); err == nil {
		t.Error("an empty tree has no packages, want an error")
	}
}

// TestSchemaFS reads the made-up tree from memory, as a release's tree read
// from ASO's Git repository would be, and gets the golden facts.
func TestSchemaFS(t *testing.T) {
	mem := fstest.MapFS{}
	err := filepath.WalkDir(schemaTestTree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(p, filepath.Join(schemaTestTree, "v2")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(schemaTestTree, p)
		mem[filepath.ToSlash(rel)] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files, err := SchemasFS(mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("%d packages, want 2", len(files))
	}
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(schemaTestTree, "want", filepath.FromSlash(f.Path())))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s from memory differs from the golden file:\n got  %s\n want %s", f.Path(), got, want)
		}
	}
	delete(mem, "v2/api/widget/v1api20240101/arm/gadget_spec_types_gen.go")
	_, err = SchemaFS(mem, "widget.azure.com", "v1api20240101")
	if err == nil || !strings.Contains(err.Error(), "arm type Gadget_Spec not found") {
		t.Errorf("without the ARM file: error %v, want arm type Gadget_Spec not found", err)
	}
}
