package azure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func clearCloudEnv(t *testing.T) {
	for _, k := range []string{EnvCloudConfig, EnvARMEndpoint, EnvAuthorityHost, EnvARMAudience, EnvCAFile} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestLoadCloud(t *testing.T) {
	f := newFakeAzure(t)
	ca := f.cloud().CAFile
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), mustRead(t, ca), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cloud.json")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"name":"gitaso-emulator","armEndpoint":"https://127.0.0.1:8443","authorityHost":"https://127.0.0.1:8443/",
 "audience":"https://management.azure.com","caFile":"ca.pem","tenantId":"t1","subscriptionId":"s1"}`)

	t.Run("file", func(t *testing.T) {
		clearCloudEnv(t)
		got, err := LoadCloud(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := Cloud{Name: "gitaso-emulator", ARMEndpoint: "https://127.0.0.1:8443", AuthorityHost: "https://127.0.0.1:8443/",
			Audience: PublicARMAudience, CAFile: filepath.Join(dir, "ca.pem"), TenantID: "t1", SubscriptionID: "s1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("env path and overrides", func(t *testing.T) {
		clearCloudEnv(t)
		t.Setenv(EnvCloudConfig, cfg)
		t.Setenv(EnvARMEndpoint, "https://arm.local:9443")
		t.Setenv(EnvCAFile, ca)
		got, err := LoadCloud("")
		if err != nil {
			t.Fatal(err)
		}
		if got.ARMEndpoint != "https://arm.local:9443" || got.CAFile != ca || got.AuthorityHost != "https://127.0.0.1:8443/" || got.Audience != PublicARMAudience {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("public by default", func(t *testing.T) {
		clearCloudEnv(t)
		got, err := LoadCloud("")
		if err != nil || got != PublicCloud() {
			t.Errorf("got %+v %v", got, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		clearCloudEnv(t)
		for _, tc := range []struct{ env, val, want string }{
			{EnvARMEndpoint, "http://127.0.0.1:8080", "must use https"},
			{EnvAuthorityHost, "not a url", "not an absolute URL"},
			{EnvCAFile, filepath.Join(dir, "missing.pem"), "reading CA file"},
			{EnvCAFile, cfg, "holds no PEM certificate"},
		} {
			t.Setenv(tc.env, tc.val)
			_, err := LoadCloud(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s=%s: want %q, got %v", tc.env, tc.val, tc.want, err)
			}
			os.Unsetenv(tc.env)
		}
		write(`{"armEndpoint":"https://x","authorityHost":"https://y/","typo":1}`)
		if _, err := LoadCloud(cfg); err == nil || !strings.Contains(err.Error(), "typo") {
			t.Errorf("unknown field accepted: %v", err)
		}
	})
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
