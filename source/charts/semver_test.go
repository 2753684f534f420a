package charts

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPickVersion(t *testing.T) {
	versions := []string{"1.0.0", "1.1.0", "v1.2.0", "1.3.0-rc.1", "2.0.0", "not-semver", "2.1.0-alpha"}
	for _, tc := range []struct{ c, want, err string }{
		{"", "2.0.0", ""},
		{"*", "2.0.0", ""},
		{"1.x", "v1.2.0", ""},
		{">=1.3.0-0 <2", "1.3.0-rc.1", ""},
		{"1.3.0-rc.1", "1.3.0-rc.1", ""},
		{">2.0.0-0", "2.1.0-alpha", ""},
		{"~1.0.0", "1.0.0", ""},
		{"3", "", "no version matches (available: 1.0.0, 1.1.0, v1.2.0, 1.3.0-rc.1, 2.0.0, 2.1.0-alpha)"},
		{">>1", "", "is not a semver constraint"},
	} {
		got, err := pickVersion(versions, tc.c)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.c, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.c, got, err, tc.want)
		}
	}
	if _, err := pickVersion(nil, "*"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "available: none") {
		t.Errorf("no versions: %v", err)
	}
}

func TestPickTag(t *testing.T) {
	tags := []string{"1.0.0", "1.0.1_build.2", "latest", "1.1.0-rc.1", "v2.0.0"}
	for _, tc := range []struct {
		c      string
		filter string
		want   string
	}{
		{"1.0.x", "", "1.0.1_build.2"},
		{"", "", "v2.0.0"},
		{">=1.1.0-0 <2", "", "1.1.0-rc.1"},
		{"*", `^1\.0\.0$`, "1.0.0"},
	} {
		var re *regexp.Regexp
		if tc.filter != "" {
			re = regexp.MustCompile(tc.filter)
		}
		got, err := pickTag(tags, tc.c, re)
		if err != nil || got != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.c, got, err, tc.want)
		}
	}
}

func TestIsExactVersion(t *testing.T) {
	got := map[string]bool{}
	for _, v := range []string{"1.2.3", "v1.2.3", "1.2.3+b_1", "1.2", "1.x", "*", "", ">=1.0.0", "1.2.3-rc.1"} {
		got[v] = isExactVersion(v)
	}
	want := map[string]bool{"1.2.3": true, "v1.2.3": true, "1.2.3+b_1": false, "1.2": false, "1.x": false, "*": false, "": false, ">=1.0.0": false, "1.2.3-rc.1": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestJWTClaimsAndScopes(t *testing.T) {
	if c := jwtClaims("a.eyJleHAiOjQyLCJ0aWQiOiJ0In0.c"); c["exp"] != float64(42) || c["tid"] != "t" {
		t.Errorf("claims %v", c)
	}
	if c := jwtClaims("opaque"); c != nil {
		t.Errorf("opaque token: %v", c)
	}
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{
		"x.azurecr.io":     "https://management.azure.com/.default",
		"x.azurecr.cn:443": "https://management.chinacloudapi.cn/.default",
		"x.azurecr.us":     "https://management.usgovcloudapi.net/.default",
		"127.0.0.1:5000":   "https://management.azure.com/.default",
	} {
		if got := f.azureScope(host); got != want {
			t.Errorf("%s: %s, want %s", host, got, want)
		}
	}
	if f.opts.IndexTTL != DefaultIndexTTL || f.opts.Timeout != DefaultTimeout {
		t.Errorf("defaults %v %v", f.opts.IndexTTL, time.Duration(f.opts.Timeout))
	}
}

func TestDockerConfigAuth(t *testing.T) {
	raw := []byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"},"reg.example:5000":{"username":"u","password":"p"}}}`)
	for _, host := range []string{"index.docker.io", "reg.example:5000"} {
		a, err := dockerConfigAuth(raw, host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		cfg, err := a.Authorization()
		if err != nil || (cfg.Auth != "dTpw" && cfg.Username != "u") {
			t.Errorf("%s: %+v %v", host, cfg, err)
		}
	}
	if _, err := dockerConfigAuth(raw, "other.example"); !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "dTpw") {
		t.Errorf("no entry: %v", err)
	}
	if _, err := dockerConfigAuth([]byte("{"), "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad JSON: %v", err)
	}
}
