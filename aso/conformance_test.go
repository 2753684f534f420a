package aso

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const zeroSub = "00000000-0000-0000-0000-000000000000"

// world is a set of manifests in one namespace plus the ConfigMap/Secret
// inputs; it resolves references and owner chains the way the planner will.
type world struct {
	sub        string
	objs       map[string]*obj // "group/Kind/name"
	configMaps map[string]map[string]string
	secrets    map[string]map[string]string
}

func newWorld() *world {
	return &world{sub: zeroSub, objs: map[string]*obj{}, configMaps: map[string]map[string]string{}, secrets: map[string]map[string]string{}}
}

func (w *world) add(o *obj) { w.objs[o.k.Group+"/"+o.k.Kind+"/"+o.name] = o }

var errNotFound = errors.New("not found")

func (w *world) ResourceID(group, kind, name string) (string, error) {
	o, ok := w.objs[group+"/"+kind+"/"+name]
	if !ok {
		if group == "resources.azure.com" && kind == "ResourceGroup" {
			return "/subscriptions/" + w.sub + "/resourceGroups/" + name, nil
		}
		return "", fmt.Errorf("%s/%s %s: %w", group, kind, name, errNotFound)
	}
	return w.armID(o)
}

func (w *world) armID(o *obj) (string, error) {
	name, err := AzureName(o.k, o.namespace, o.name, o.spec)
	if err != nil {
		return "", err
	}
	owner, err := OwnerOf(o.k, o.spec)
	if err != nil {
		return "", err
	}
	ownerID := owner.ARMID
	if ownerID == "" && owner.Name != "" {
		ownerID, err = w.ResourceID(owner.Group, owner.Kind, owner.Name)
		if err != nil {
			return "", fmt.Errorf("owner: %w", err)
		}
	}
	return ARMID(o.k, w.sub, ownerID, name)
}

func (w *world) Secret(name, key string) (string, error) {
	v, ok := w.secrets[name][key]
	if !ok {
		return "", fmt.Errorf("secret %s key %s: %w", name, key, errNotFound)
	}
	return v, nil
}

func (w *world) SecretMap(name string) (map[string]string, error) {
	v, ok := w.secrets[name]
	if !ok {
		return nil, fmt.Errorf("secret %s: %w", name, errNotFound)
	}
	return v, nil
}

func (w *world) ConfigMap(name, key string) (string, error) {
	v, ok := w.configMaps[name][key]
	if !ok {
		return "", ErrUnknown
	}
	return v, nil
}

type expectedSet struct {
	Test struct {
		RandomNames bool `json:"randomNames"`
	} `json:"test"`
	NameMap    map[string]string `json:"nameMap"`
	TestInputs struct {
		ConfigMaps map[string]map[string]string `json:"configMaps"`
		Secrets    map[string]map[string]string `json:"secrets"`
	} `json:"testInputs"`
	ExcludedSamples []struct {
		File string `json:"file"`
	} `json:"excludedSamples"`
	Resources []struct {
		File           string          `json:"file"`
		Kind           string          `json:"kind"`
		Name           string          `json:"name"`
		AzureName      string          `json:"azureName"`
		Method         string          `json:"method"`
		BodyRaw        string          `json:"bodyRaw"`
		PathNormalized string          `json:"pathNormalized"`
		BodyNormalized json.RawMessage `json:"bodyNormalized"`
		OwnerYaml      string          `json:"ownerYaml"`
		OwnerEffective string          `json:"ownerEffective"`
		ExternalInputs []struct {
			Field string `json:"field"`
			Kind  string `json:"kind"`
		} `json:"externalInputs"`
	} `json:"resources"`
}

var conformanceSets = []string{"resources", "managedidentity", "storage", "servicebus", "dbforpostgresql", "authorization", "cdn"}

func TestConformance(t *testing.T) {
	shared := sharedDir(t)
	total, exact := 0, 0
	for _, set := range conformanceSets {
		dirs, err := filepath.Glob(filepath.Join(shared, "conformance", "aso", set, "*", "expected.json"))
		if err != nil || len(dirs) == 0 {
			t.Fatalf("no expected.json under %s: %v", set, err)
		}
		for _, exp := range dirs {
			dir := filepath.Dir(exp)
			t.Run(set+"/"+filepath.Base(dir), func(t *testing.T) {
				n, e := runConformanceSet(t, dir, exp)
				total += n
				exact += e
			})
		}
	}
	t.Logf("conformance: %d PUTs compared on path and body, %d also byte for byte against bodyRaw", total, exact)
}

func runConformanceSet(t *testing.T, dir, exp string) (compared, exact int) {
	raw, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	var es expectedSet
	if err := json.Unmarshal(raw, &es); err != nil {
		t.Fatalf("%s: %v", exp, err)
	}
	excluded := map[string]bool{}
	for _, x := range es.ExcludedSamples {
		excluded[x.File] = true
	}
	w := newWorld()
	for k, v := range es.TestInputs.ConfigMaps {
		w.configMaps[k] = v
	}
	for k, v := range es.TestInputs.Secrets {
		w.secrets[k] = v
	}
	byFile := map[string]*obj{}
	for _, r := range es.Resources {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.File)))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseYAML(data)
		if err != nil {
			t.Fatalf("%s: %v", r.File, err)
		}
		if len(docs) != 1 {
			t.Fatalf("%s: %d documents, want 1", r.File, len(docs))
		}
		o, err := newTestObj(r.File, docs[0])
		if err != nil {
			t.Fatal(err)
		}
		if r.OwnerEffective != "" { // the test re-pointed an owner that names no sample
			o.spec["owner"].(map[string]any)["name"] = r.OwnerEffective
		}
		byFile[r.File] = o
		w.add(o)
	}
	// Names to map the recorded bytes back to the YAML names.
	var pairs []string
	for key, testName := range es.NameMap {
		yamlName := key
		if i := strings.Index(key, "/"); i >= 0 {
			yamlName = key[i+1:]
		}
		if strings.HasPrefix(key, "aso-sample-rg ") {
			yamlName = "aso-sample-rg"
		}
		pairs = append(pairs, testName, yamlName)
	}

	for _, r := range es.Resources {
		if excluded[r.File] || r.Method != "PUT" {
			continue
		}
		o := byFile[r.File]
		t.Run(r.File, func(t *testing.T) {
			name, err := AzureName(o.k, o.namespace, o.name, o.spec)
			if err != nil {
				t.Fatalf("AzureName: %v", err)
			}
			id, err := w.armID(o)
			if err != nil {
				t.Fatalf("ARMID: %v", err)
			}
			path := id + "?api-version=" + o.k.APIVersion
			if path != r.PathNormalized {
				t.Errorf("path\n got %s\nwant %s", path, r.PathNormalized)
			}
			body, err := Convert(o.k, o.spec, name, w)
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			var got, want any
			if err := json.Unmarshal(body.JSON, &got); err != nil {
				t.Fatalf("Convert produced invalid JSON %s: %v", body.JSON, err)
			}
			if err := json.Unmarshal(r.BodyNormalized, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s\ngot %s", diff, body.JSON)
			}
			compared++
			// Byte-for-byte: map the recorded body back to the YAML names.
			rp := append([]string(nil), pairs...)
			if seg := lastSegment(r.PathNormalized); r.AzureName != "" && r.AzureName != seg {
				rp = append(rp, r.AzureName, seg)
			}
			wantRaw := strings.NewReplacer(rp...).Replace(r.BodyRaw)
			if string(body.JSON) != wantRaw {
				t.Errorf("bytes differ from bodyRaw\n got %s\nwant %s", body.JSON, wantRaw)
			} else {
				exact++
			}
			// Secret-sourced values are listed.
			for _, in := range r.ExternalInputs {
				if in.Kind == "secretRef" && len(body.Secrets) == 0 {
					t.Errorf("%s comes from a secret but Body.Secrets is empty", in.Field)
				}
			}
		})
	}
	return compared, exact
}

func lastSegment(path string) string {
	p, _, _ := strings.Cut(path, "?")
	return p[strings.LastIndex(p, "/")+1:]
}

// TestConformanceSecretsAndUnknown checks the pointer lists on real samples.
func TestConformanceSecretsAndUnknown(t *testing.T) {
	shared := sharedDir(t)
	files := []string{
		"dbforpostgresql/v1api20240801/v1api20240801_flexibleserver.yaml",
		"authorization/v1api20220401/v1api20220401_roleassignment.yaml",
	}
	w := newWorld()
	w.secrets["server-admin-pw"] = map[string]string{"password": "s3cret<&>"}
	var got [][]string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(shared, "conformance", "aso", f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseYAML(data)
		if err != nil {
			t.Fatal(err)
		}
		o, err := newTestObj(f, docs[0])
		if err != nil {
			t.Fatal(err)
		}
		name, err := AzureName(o.k, o.namespace, o.name, o.spec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Convert(o.k, o.spec, name, w) // no config map: principalId is unknown
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Secrets, b.Unknown)
		if f == files[0] && !strings.Contains(string(b.JSON), `"administratorLoginPassword":"s3cret\u003c\u0026\u003e"`) {
			t.Errorf("secret value not HTML-escaped as encoding/json does: %s", b.JSON)
		}
		if f == files[1] && !strings.Contains(string(b.JSON), `"principalId":"`+UnknownValue+`"`) {
			t.Errorf("unknown value not written: %s", b.JSON)
		}
	}
	want := [][]string{{"/properties/administratorLoginPassword"}, nil, nil, {"/properties/principalId"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Secrets/Unknown pointers (-want +got):\n%s", diff)
	}
}

var _ = sort.Strings
