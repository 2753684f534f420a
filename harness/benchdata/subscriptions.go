package benchdata

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/aso"
)

// SpreadOverSubscriptions puts the namespaces Generate wrote to dir (with
// subscription from) in the subscriptions subs in turn: each namespace's
// manifests name its subscription instead of from, and an aso-credential
// Secret in it signs in as clientID/secret of tenant to that subscription.
func SpreadOverSubscriptions(dir, from string, subs []string, tenant, clientID, secret string) error {
	if len(subs) == 0 {
		return fmt.Errorf("benchdata: no subscriptions to spread over")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("benchdata: %w", err)
	}
	i := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := subs[i%len(subs)]
		i++
		nsDir := filepath.Join(dir, e.Name())
		files, err := filepath.Glob(filepath.Join(nsDir, "*.yaml"))
		if err != nil {
			return fmt.Errorf("benchdata: %w", err)
		}
		ns := ""
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("benchdata: %w", err)
			}
			text := strings.ReplaceAll(string(data), from, sub)
			if ns == "" {
				if j := strings.Index(text, "namespace: "); j >= 0 {
					ns = strings.TrimSpace(strings.SplitN(text[j+len("namespace: "):], "\n", 2)[0])
				}
			}
			if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
				return fmt.Errorf("benchdata: %w", err)
			}
		}
		if ns == "" {
			return fmt.Errorf("benchdata: %s: no manifest names its namespace", nsDir)
		}
		cred := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\nstringData:\n  AZURE_SUBSCRIPTION_ID: %q\n  AZURE_TENANT_ID: %q\n  AZURE_CLIENT_ID: %q\n  AZURE_CLIENT_SECRET: %q\n",
			aso.NamespaceCredentialSecret, ns, sub, tenant, clientID, secret)
		if err := os.WriteFile(filepath.Join(nsDir, aso.NamespaceCredentialSecret+".yaml"), []byte(cred), 0o644); err != nil {
			return fmt.Errorf("benchdata: %w", err)
		}
	}
	return nil
}

// Count is a benchmark's resource count: def, or the environment variable
// name when set, which must then be a multiple of multiple.
func Count(name string, def, multiple int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < multiple || n%multiple != 0 {
		return 0, fmt.Errorf("%s=%q: want a multiple of %d", name, v, multiple)
	}
	return n, nil
}
