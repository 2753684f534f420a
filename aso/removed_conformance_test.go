package aso

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRemovedVersionsMatchRecordings is a development check: with
// GITASO_ASO_GIT set to ASO's Git repository, it converts ASO's own samples
// of every removed version the catalog holds, as the release that last had
// it shipped them (v2/samples), and compares each PUT with the one that
// release's recorded sample test sent to Azure
// (Test_Samples_CreationAndDeletion recordings), byte for byte. Releases
// before v2.4 recorded their samples under random names: a PUT of the same
// path shape stands in, its names mapped. Samples that need a secret or
// another object's output are skipped. It reads the files with git show;
// nothing of ASO is kept.
func TestRemovedVersionsMatchRecordings(t *testing.T) {
	gitDir := os.Getenv("GITASO_ASO_GIT")
	if gitDir == "" {
		t.Skip("GITASO_ASO_GIT not set (development check against ASO's release recordings)")
	}
	git := func(args ...string) ([]byte, error) {
		return exec.Command("git", append([]string{"--git-dir", gitDir}, args...)...).Output()
	}
	type gv struct{ group, version, tag string }
	var gvs []gv
	seen := map[gv]bool{}
	for _, k := range RemovedKinds() {
		x := gv{k.Group, k.Version, k.Removed.LastIn}
		if !seen[x] {
			seen[x] = true
			gvs = append(gvs, x)
		}
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].group+gvs[i].version < gvs[j].group+gvs[j].version })
	compared, exact := 0, 0
	perGV := map[string]int{}
	for _, p := range gvs {
		short := strings.TrimSuffix(p.group, ".azure.com")
		// Samples: v2/samples/<group>/<version>/ since v2.4, v2/samples/<group>/v1beta/ before.
		var files []string
		for _, dir := range []string{path.Join("v2/samples", short, p.version), path.Join("v2/samples", short, "v1beta")} {
			out, err := git("ls-tree", "-r", "--name-only", p.tag, dir)
			if err == nil {
				files = append(files, strings.Fields(string(out))...)
			}
		}
		var rec []byte
		for _, dir := range []string{"v2/internal/testsamples/recordings", "v2/internal/controllers/recordings"} {
			for _, v := range []string{p.version, "v1beta"} {
				name := "Test_" + strings.ToUpper(short[:1]) + short[1:] + "_" + v + "_CreationAndDeletion.yaml"
				if b, err := git("show", p.tag+":"+dir+"/Test_Samples_CreationAndDeletion/"+name); err == nil && rec == nil {
					rec = b
				}
			}
		}
		if len(files) == 0 || rec == nil {
			t.Logf("%s/%s at %s: no samples or no recording", p.group, p.version, p.tag)
			continue
		}
		puts, err := readRecordedPUTs(rec)
		if err != nil {
			t.Errorf("%s/%s: recording: %v", p.group, p.version, err)
			continue
		}
		w := newWorld()
		var objs []*obj
		for _, f := range files {
			if !strings.HasSuffix(f, ".yaml") {
				continue
			}
			b, err := git("show", p.tag+":"+f)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := parseYAML(b)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			for _, d := range docs {
				o, err := newTestObj(f, d)
				if err != nil {
					continue // a kind of another version the catalog does not hold
				}
				w.add(o)
				if o.k.Group == p.group && o.k.Version == p.version {
					objs = append(objs, o)
				}
			}
		}
		for _, o := range objs {
			if o.k.Kind == "ResourceGroup" {
				continue // the test puts the samples in a resource group of its own
			}
			id, err := w.armID(o)
			if err != nil {
				t.Logf("%s %s: %v", o.file, o.name, err)
				continue
			}
			pth := strings.ToLower(id + "?api-version=" + o.k.APIVersion)
			want, ok := puts[pth]
			if !ok {
				// Releases before v2.4 recorded their samples under random
				// names: the one PUT of the same shape, its names mapped to
				// the sample's.
				want, ok = puts.sameShape(pth)
			}
			if !ok {
				t.Logf("%s %s: no recorded PUT %s", o.file, o.name, pth)
				continue
			}
			name, _ := AzureName(o.k, o.namespace, o.name, o.spec)
			body, err := Convert(o.k, o.spec, name, w)
			if err != nil {
				t.Logf("%s %s: %v", o.file, o.name, err)
				continue
			}
			if len(body.Unknown) > 0 {
				t.Logf("%s %s: %v come from other objects' outputs, which the recording has", o.file, o.name, body.Unknown)
				continue
			}
			compared++
			perGV[p.group+"/"+p.version+"@"+p.tag]++
			got := strings.ReplaceAll(string(body.JSON), "/resourceGroups/aso-sample-rg/", "/resourceGroups/"+want.rg+"/")
			for _, r := range want.renames {
				// The resource's own name (the body's first "name"), and
				// the names in ARM IDs.
				got = strings.Replace(got, `"name":"`+r[1]+`"`, `"name":"`+r[0]+`"`, 1)
				got = strings.ReplaceAll(got, "/"+r[1]+`"`, "/"+r[0]+`"`)
				got = strings.ReplaceAll(got, "/"+r[1]+"/", "/"+r[0]+"/")
			}
			if got == want.body {
				exact++
				continue
			}
			var g, wv any
			_ = json.Unmarshal([]byte(got), &g)
			_ = json.Unmarshal([]byte(want.body), &wv)
			t.Errorf("%s/%s %s %s at %s: body differs from the recording (-recorded +gitaso):\n%s", p.group, p.version, o.kind, o.name, p.tag, cmp.Diff(wv, g))
		}
	}
	t.Logf("removed versions: %d PUTs compared with their release's recordings, %d byte for byte; by group/version: %v", compared, exact, perGV)
}

type recordedPUT struct {
	body, rg string
	renames  [][2]string // recorded name, sample name (sameShape)
}

type recordedPUTs map[string]recordedPUT

// shape is a request path with its resource names replaced by *.
func shape(p string) (string, []string) {
	segs := strings.Split(p, "/")
	var names []string
	for i := 1; i < len(segs); i++ {
		prev := segs[i-1]
		named := prev == "resourcegroups"
		if j := lastIndex(segs[:i], "providers"); j >= 0 && i > j+1 && (i-j)%2 == 1 {
			named = true // /providers/{ns}/{type}/{name}/{type}/{name}…
		}
		if named {
			names = append(names, segs[i])
			segs[i] = "*"
		}
	}
	return strings.Join(segs, "/"), names
}

func lastIndex(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}

// sameShape finds the one recorded PUT whose path has pth's shape and
// api-version, with the renames that map its names to pth's.
func (r recordedPUTs) sameShape(pth string) (recordedPUT, bool) {
	p, q, _ := strings.Cut(pth, "?")
	want, ours := shape(p)
	var found []string
	for k := range r {
		kp, kq, _ := strings.Cut(k, "?")
		if s, _ := shape(kp); s == want && kq == q {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return recordedPUT{}, false
	}
	put := r[found[0]]
	kp, _, _ := strings.Cut(found[0], "?")
	_, theirs := shape(kp)
	for i := range theirs {
		if i < len(ours) && theirs[i] != ours[i] && theirs[i] != "aso-sample-rg" {
			put.renames = append(put.renames, [2]string{theirs[i], ours[i]})
		}
	}
	return put, true
}

var recordedRG = regexp.MustCompile(`(?i)/resourcegroups/(asotest-rg-[a-z0-9]+)`)

// recordedPUTs reads a go-vcr recording: the first PUT to each path, with
// the test's resource group named aso-sample-rg as in the samples.
func readRecordedPUTs(b []byte) (recordedPUTs, error) {
	docs, err := parseYAML(b)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	out := recordedPUTs{}
	items, _ := docs[0]["interactions"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		req, _ := m["request"].(map[string]any)
		if req["method"] != "PUT" {
			continue
		}
		u, err := url.Parse(req["url"].(string))
		if err != nil {
			return nil, err
		}
		rg := ""
		if x := recordedRG.FindStringSubmatch(u.Path); x != nil {
			rg = x[1]
		}
		p := u.Path
		if rg != "" {
			p = strings.Replace(p, rg, "aso-sample-rg", 1)
		}
		key := strings.ToLower(p + "?api-version=" + u.Query().Get("api-version"))
		if _, dup := out[key]; !dup {
			body, _ := req["body"].(string)
			out[key] = recordedPUT{body: body, rg: rg}
		}
	}
	return out, nil
}
