package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/source"
)

const sopsDir = "testdata/sops"

// sopsLine is the 1-based line of the top-level sops: key in text.
func sopsLine(t *testing.T, text string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "sops:") {
			return i + 1
		}
	}
	t.Fatal("no sops: line")
	return 0
}

func testIdentities(t testing.TB, name string) []age.Identity {
	t.Helper()
	ids, err := LoadAgeIdentities(filepath.Join(sopsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sopsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plainValues are the cleartext values of every fixture (the inputs SOPS
// encrypted), which decryption must give back.
func plainValues(t *testing.T, name string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(readFixture(t, "plain/"+name)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDecryptFixtures(t *testing.T) {
	ids := testIdentities(t, "test-only.agekey")
	for _, tc := range []struct{ enc, plain string }{
		{"secret.sops.yaml", "secret.yaml"},
		{"aso-credential.sops.yaml", "aso-credential.yaml"},
		{"whole.sops.yaml", "whole.yaml"}, // every value encrypted: ints, floats, bools, a list, comments
		{"maconly.sops.yaml", "maconly.yaml"},
		{"secret.sops.json", "secret.json"},
	} {
		t.Run(tc.enc, func(t *testing.T) {
			in := readFixture(t, tc.enc)
			out, ok, derr := decryptSOPS(in, ids)
			if derr != nil || !ok {
				t.Fatalf("decrypt: ok=%v %v", ok, derr)
			}
			if strings.Contains(out, "ENC[") || strings.Contains(out, "sops") || strings.Contains(out, "AGE ENCRYPTED") {
				t.Errorf("encrypted text or metadata left:\n%s", out)
			}
			var got any
			if strings.HasSuffix(tc.enc, ".json") {
				// Still JSON, not only YAML.
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("output is not JSON: %v\n%s", err, out)
				}
				var want any
				if err := json.Unmarshal([]byte(readFixture(t, "plain/"+tc.plain)), &want); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("values differ (-want +got):\n%s", d)
				}
			} else {
				if err := yaml.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("output is not YAML: %v\n%s", err, out)
				}
				if d := cmp.Diff(plainValues(t, tc.plain), got); d != "" {
					t.Errorf("values differ (-want +got):\n%s", d)
				}
			}
			// Lines stay where they were.
			inLines, outLines := strings.Split(in, "\n"), strings.Split(out, "\n")
			if len(inLines) != len(outLines) {
				t.Fatalf("%d lines became %d", len(inLines), len(outLines))
			}
			for i, l := range inLines {
				if k, _, found := strings.Cut(l, ":"); found && !strings.Contains(l, "ENC[") && strings.TrimSpace(k) == "stringData" && outLines[i] != l {
					t.Errorf("line %d moved: %q became %q", i+1, l, outLines[i])
				}
			}
		})
	}
}

func TestDecryptPassthrough(t *testing.T) {
	for _, in := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
		// A field called sops that is not SOPS metadata.
		"apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: sops\nsops:\n  enabled: true\n",
		"- sops\n- list\n",
		"not: [valid\nsops",
	} {
		out, ok, derr := decryptSOPS(in, nil)
		if ok || derr != nil || out != in {
			t.Errorf("%q: ok=%v err=%v out=%q, want it untouched", in, ok, derr, out)
		}
	}
}

func TestDecryptWrongIdentity(t *testing.T) {
	in := readFixture(t, "secret.sops.yaml")
	_, _, derr := decryptSOPS(in, testIdentities(t, "test-only-other.agekey"))
	if derr == nil || !errors.Is(derr, ErrSOPSNoIdentity) {
		t.Fatalf("got %v, want ErrSOPSNoIdentity", derr)
	}
	msg := derr.Error()
	for _, want := range []string{"no age identity given to gitaso can decrypt this file", "age1ghztvpeutvgyv2dwnsmlmlvf0hdnt3hzxaju64rg8ftyz8djndfsq0u320"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if want := sopsLine(t, in); derr.Line != want {
		t.Errorf("line %d, want %d (the sops: line)", derr.Line, want)
	}

	_, _, derr = decryptSOPS(in, nil)
	if derr == nil || !strings.Contains(derr.Error(), "no age identity is configured") || !strings.Contains(derr.Error(), "--sops-age-key-file") {
		t.Errorf("no identities: %v", derr)
	}
}

// secretValues are cleartext values of secret.yaml that must never show in
// an error.
var secretValues = []string{"admin", "s3cr3t", "line one"}

func TestDecryptTampered(t *testing.T) {
	ids := testIdentities(t, "test-only.agekey")
	in := readFixture(t, "secret.sops.yaml")
	lines := strings.Split(in, "\n")
	lineOf := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return i
			}
		}
		t.Fatalf("no %q", prefix)
		return 0
	}
	value := func(i int) string { return strings.TrimSpace(strings.SplitN(lines[i], ":", 2)[1]) }
	with := func(edit func(l []string)) string {
		l := append([]string(nil), lines...)
		edit(l)
		return strings.Join(l, "\n")
	}
	pw, ml, name := lineOf("password:"), lineOf("multiline:"), lineOf("name:")

	for _, tc := range []struct {
		name, text string
		field      string
		mac        bool
	}{
		// A cleartext value SOPS covered by the MAC.
		{"cleartext changed", with(func(l []string) { l[name] = "    name: other-name" }), "sops.mac", true},
		// An encrypted entry removed.
		{"entry removed", with(func(l []string) { l[ml] = "" }), "sops.mac", true},
		// An entry added in clear text where values are encrypted.
		{"entry added", with(func(l []string) { l[ml] += "\n    injected: " + value(pw) }), "stringData.injected", false},
		// Two encrypted values swapped: the key path is the additional data.
		{"values swapped", with(func(l []string) {
			a, b := value(pw), value(ml)
			l[pw], l[ml] = "    password: "+b, "    multiline: "+a
		}), "stringData.password", false},
		// A bit of ciphertext flipped.
		{"ciphertext changed", with(func(l []string) { l[pw] = strings.Replace(l[pw], "data:k", "data:K", 1) }), "stringData.password", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, derr := decryptSOPS(tc.text, ids)
			if derr == nil {
				t.Fatal("tampered file decrypted")
			}
			if derr.Field != tc.field || errors.Is(derr, ErrSOPSMACMismatch) != tc.mac {
				t.Errorf("error %q (field %q), want field %q, MAC mismatch %v", derr, derr.Field, tc.field, tc.mac)
			}
			if derr.Line == 0 {
				t.Errorf("error %q has no line", derr)
			}
			for _, s := range secretValues {
				if strings.Contains(derr.Error(), s) {
					t.Errorf("error %q shows a decrypted value", derr)
				}
			}
		})
	}
}

// With mac_only_encrypted, cleartext fields are outside the MAC (so that
// kustomize may rename or relabel the Secret).
func TestDecryptMACOnlyEncrypted(t *testing.T) {
	in := strings.Replace(readFixture(t, "maconly.sops.yaml"), "name: maconly", "name: prefixed-maconly", 1)
	out, _, derr := decryptSOPS(in, testIdentities(t, "test-only.agekey"))
	if derr != nil {
		t.Fatal(derr)
	}
	if !strings.Contains(out, `key: "value-mac-only"`) {
		t.Errorf("output:\n%s", out)
	}
}

func copyFixtures(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Rendering: a multi-document file keeps its objects' lines, the
// decrypted Secret feeds substitution (decryption comes first), a file
// without SOPS passes through, errors name file and line.
func TestRenderDecrypts(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: apps\ndata:\n  k: v\n"
	rg := "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: platform\nspec:\n  location: westeurope\n  tags:\n    tenant: ${AZURE_TENANT_ID}\n"
	dir := copyFixtures(t, map[string]string{
		"multi.yaml": cm + "---\n" + readFixture(t, "aso-credential.sops.yaml"),
		"rg.yaml":    rg,
		"plain.yaml": strings.Replace(cm, "name: plain", "name: other", 1),
	})
	ref, _ := ParseRef("Secret/platform/aso-credential")
	snap, err := fetch(t, dir, "", Options{Substitute: true, SubstituteFrom: []Ref{ref}, Strict: true, AgeIdentities: testIdentities(t, "test-only.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"multi.yaml:1#0 apps/ConfigMap/plain", "multi.yaml:9#1 platform/Secret/aso-credential", "plain.yaml:1#0 apps/ConfigMap/other", "rg.yaml:1#0 platform/ResourceGroup/rg"}
	if d := cmp.Diff(want, where(snap.Objects)); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	sec := find(t, snap, "platform/Secret/aso-credential")
	if _, ok := sec.Content["sops"]; ok {
		t.Error("sops metadata left in the object")
	}
	if got := sec.Content["stringData"].(map[string]any)["AZURE_CLIENT_SECRET"]; got != "test-client-secret" {
		t.Errorf("AZURE_CLIENT_SECRET not decrypted")
	}
	tags := find(t, snap, "platform/ResourceGroup/rg").Content["spec"].(map[string]any)["tags"].(map[string]any)
	if tags["tenant"] != "00000000-0000-0000-0000-0000000000aa" {
		t.Errorf("substitution from the decrypted Secret: tenant=%v", tags["tenant"])
	}
	// The value came from a Secret: it is secret wherever it lands.
	if d := cmp.Diff([]string{"Secret platform/aso-credential=00000000-0000-0000-0000-0000000000aa"}, froms(find(t, snap, "platform/ResourceGroup/rg"))); d != "" {
		t.Errorf("secret values of the decrypted Secret (-want +got):\n%s", d)
	}

	// Without identities: an error naming the file and the sops line.
	_, err = fetch(t, dir, "", Options{})
	line := 8 + sopsLine(t, readFixture(t, "aso-credential.sops.yaml"))
	if got := errorLines(err); len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf("multi.yaml:%d: platform/Secret/aso-credential: sops: SOPS-encrypted, but no age identity is configured", line)) {
		t.Errorf("errors %q", got)
	}
	// The wrong identity.
	_, err = fetch(t, dir, "", Options{AgeIdentities: testIdentities(t, "test-only-other.agekey")})
	if !strings.Contains(err.Error(), fmt.Sprintf("multi.yaml:%d: platform/Secret/aso-credential: sops.age: no age identity given to gitaso can decrypt this file (recipients: age1", line)) {
		t.Errorf("wrong identity: %v", err)
	}
}

// Flux decrypts after its kustomize build: an encrypted Secret listed as a
// kustomize resource is decrypted from the build output.
func TestRenderDecryptsKustomizeOutput(t *testing.T) {
	dir := copyFixtures(t, map[string]string{
		"app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- secret.yaml\n- whole.yaml\n",
		"app/secret.yaml":        readFixture(t, "secret.sops.yaml"),
		"app/whole.yaml":         readFixture(t, "whole.sops.yaml"),
	})
	snap, err := fetch(t, dir, "", Options{Kustomize: true, AgeIdentities: testIdentities(t, "test-only.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	sec := find(t, snap, "apps/Secret/app-credentials")
	if d := cmp.Diff(plainValues(t, "secret.yaml").(map[string]any)["stringData"], sec.Content["stringData"]); d != "" {
		t.Errorf("stringData (-want +got):\n%s", d)
	}
	whole := find(t, snap, "apps/Secret/whole")
	if got := whole.Content["extra"].(map[string]any)["count"]; got != int64(7) && got != 7 && got != float64(7) {
		t.Errorf("extra.count = %#v", got)
	}
}

func TestLoadAgeIdentitiesErrors(t *testing.T) {
	dir := copyFixtures(t, map[string]string{"bad.txt": "# comment\nnot-a-key\n"})
	if _, err := LoadAgeIdentities(filepath.Join(dir, "bad.txt")); err == nil || !strings.Contains(err.Error(), "bad.txt") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := LoadAgeIdentities(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}

func BenchmarkDecryptSOPS(b *testing.B) {
	ids := testIdentities(b, "test-only.agekey")
	in := readFixture(b, "secret.sops.yaml")
	for b.Loop() {
		if _, _, derr := decryptSOPS(in, ids); derr != nil {
			b.Fatal(derr)
		}
	}
}

func BenchmarkRenderSOPS(b *testing.B) {
	ids := testIdentities(b, "test-only.agekey")
	enc := readFixture(b, "aso-credential.sops.yaml")
	var files []source.File
	for i := range 100 {
		files = append(files, source.File{Path: "ns" + string(rune('a'+i%26)) + "/s" + string(rune('a'+i/26)) + ".yaml", Data: []byte(enc)})
	}
	r, err := New(Options{AgeIdentities: ids})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Render(context.Background(), files); err != nil {
			b.Fatal(err)
		}
	}
}

// Arbitrary input never panics; a decrypted document keeps its line count
// and loses its stanza.
func FuzzDecryptSOPS(f *testing.F) {
	keys := &sopsKeys{age: testIdentities(f, "test-only.agekey"), pgp: testPGPKeys(f, "test-only-pgp.asc")}
	for _, name := range []string{"secret.sops.yaml", "whole.sops.yaml", "secret.sops.json", "maconly.sops.yaml", "pgp.sops.yaml", "multi.sops.yaml"} {
		f.Add(readFixture(f, name))
	}
	f.Add("sops:\n  mac: x\n  version: 1\n")
	f.Add(`{"sops": {"mac": "x", "version": "1"}, "a": "ENC[AES256_GCM,data:,iv:,tag:,type:str]"}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, ok, derr := decryptSOPSWith(context.Background(), in, keys)
		if derr != nil {
			return
		}
		if !ok {
			if out != in {
				t.Fatal("untouched document changed")
			}
			return
		}
		if strings.Count(out, "\n") != strings.Count(in, "\n") {
			t.Fatalf("line count changed")
		}
		var v map[string]any
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("output is not YAML: %v", err)
		}
		if _, has := v["sops"]; has {
			t.Fatal("stanza left")
		}
	})
}
