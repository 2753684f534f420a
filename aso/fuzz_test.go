package aso

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzConvert feeds arbitrary specs (JSON) to Validate, Dependencies and
// Convert of a few kinds: none may panic, and a successful Convert must
// produce valid JSON. Seeded from the conformance samples.
func FuzzConvert(f *testing.F) {
	kinds := []*Kind{
		mustKind(f, "storage.azure.com/v1api20230101", "StorageAccount"),
		mustKind(f, "storage.azure.com/v1api20230101", "StorageAccountsManagementPolicy"),
		mustKind(f, "authorization.azure.com/v1api20220401", "RoleAssignment"),
		mustKind(f, "cdn.azure.com/v1api20230501", "Rule"),
		mustKind(f, "kusto.azure.com/v1api20240413", "Database"),
		mustKind(f, "containerservice.azure.com/v1api20240901", "ManagedCluster"),
	}
	{
		files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "conformance", "aso", "*", "*", "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			docs, err := parseYAML(data)
			if err != nil || len(docs) == 0 {
				continue
			}
			b, _ := json.Marshal(docs[0]["spec"])
			for i := range kinds {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"identity":{"userAssignedIdentities":[{"reference":{"name":"x"}}]},"tags":{"<":"&"}}`))
	f.Add(uint8(3), []byte(`{"actions":[{}],"ruleconditions":[{"urlPath":{"name":"UrlPath","parameters":{}}}]}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		var spec map[string]any
		if err := json.Unmarshal(data, &spec); err != nil || spec == nil {
			return
		}
		k := kinds[int(which)%len(kinds)]
		_ = Validate(k, map[string]any{"spec": spec})
		_, _ = Dependencies(k, spec)
		b, err := Convert(k, spec, "name", fixedResolver{})
		if err != nil {
			return
		}
		if !json.Valid(b.JSON) {
			t.Fatalf("invalid JSON %s", b.JSON)
		}
	})
}
