package emulator_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

type expectedSet struct {
	Test struct {
		ResourceGroupPut struct {
			Path string         `json:"path"`
			Body map[string]any `json:"body"`
		} `json:"resourceGroupPut"`
		SubscriptionID string `json:"subscriptionId"`
		TenantID       string `json:"tenantId"`
	} `json:"test"`
	Resources []struct {
		Kind           string         `json:"kind"`
		Method         string         `json:"method"`
		Path           string         `json:"path"`
		Body           map[string]any `json:"body"`
		PutCount       int            `json:"putCount"`
		PutStatusCodes []int          `json:"putStatusCodes"`
	} `json:"resources"`
	DeleteOrder []struct {
		Path   string `json:"path"`
		Status int    `json:"status"`
	} `json:"deleteOrder"`
}

func sharedDir(t *testing.T) string {
	if d := os.Getenv("GITASO_SHARED"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "..", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// knownStatusDifferences are recorded first-PUT statuses the emulator deliberately does not reproduce.
var knownStatusDifferences = map[string]string{
	// The 2024 authorization cassette recorded 200 for the identity's first PUT (it pre-existed in the recording
	// subscription); a create answers 201, as the managedidentity cassette shows.
	"authorization/v1api20220401 Microsoft.ManagedIdentity/userAssignedIdentities": "recorded against a pre-existing identity",
}

// recordedWithoutProvisioningState are types whose recorded GET has no properties.provisioningState.
var recordedWithoutProvisioningState = map[string]bool{
	"Microsoft.Storage/storageAccounts/blobServices":  true,
	"Microsoft.Storage/storageAccounts/fileServices":  true,
	"Microsoft.Storage/storageAccounts/queueServices": true,
	"Microsoft.Storage/storageAccounts/tableServices": true,
}

// TestConformanceReplay replays ASO's recorded requests against real Azure (../shared/conformance/aso): every PUT
// in recorded order succeeds with the recorded status and a GET returns the resource; the recorded deletes succeed
// with the recorded statuses. Like ASO, a PUT whose parent does not exist yet is retried after the others.
func TestConformanceReplay(t *testing.T) {
	root := filepath.Join(sharedDir(t), "conformance", "aso")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", "expected.json"))
	if len(files) == 0 {
		t.Skipf("conformance data not found under %s (set GITASO_SHARED to the shared directory)", root)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, filepath.Dir(f))
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var set expectedSet
			if err := json.Unmarshal(data, &set); err != nil {
				t.Fatal(err)
			}
			e := newEmulator(t, emulator.WithoutThrottling(), emulator.WithSubscriptionID(set.Test.SubscriptionID), emulator.WithTenantID(set.Test.TenantID))
			c, _ := ownerClient(t, e)
			// Principals referenced by recorded role assignments existed in the recording tenant.
			for _, r := range set.Resources {
				props, _ := r.Body["properties"].(map[string]any)
				if pid, _ := props["principalId"].(string); pid != "" && strings.Contains(r.Path, "roleAssignments") {
					if _, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{ObjectID: pid, DisplayName: "recorded"}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			rgPut := set.Test.ResourceGroupPut
			if r := c.do(http.MethodPut, rgPut.Path, "", rgPut.Body); r.status != 201 {
				t.Fatalf("test RG: %d %s", r.status, r.raw)
			}
			pending := make([]int, len(set.Resources))
			for i := range pending {
				pending[i] = i
			}
			for len(pending) > 0 {
				var next []int
				for _, i := range pending {
					res := set.Resources[i]
					resp := c.doResp(http.MethodPut, res.Path, "", res.Body)
					if resp.StatusCode == http.StatusNotFound {
						var body map[string]any
						_ = json.NewDecoder(resp.Body).Decode(&body)
						resp.Body.Close()
						code, _ := body["error"].(map[string]any)["code"].(string)
						if code != "ParentResourceNotFound" {
							t.Fatalf("PUT %s: 404 %s", res.Path, code)
						}
						next = append(next, i)
						continue
					}
					status := resp.StatusCode
					if _, err := c.wait(resp); err != nil {
						t.Fatalf("PUT %s: %v", res.Path, err)
					}
					typ := typeOfPath(res.Path)
					if want := firstSuccess(res.PutStatusCodes); want != 0 && status != want && knownStatusDifferences[rel+" "+typ] == "" {
						t.Errorf("PUT %s: status %d, recorded %d", typ, status, want)
					}
					// Retries and re-reconciles re-send the same body: replay every later successful PUT.
					for _, want := range successes(res.PutStatusCodes)[min(1, len(successes(res.PutStatusCodes))):] {
						resp := c.doResp(http.MethodPut, res.Path, "", res.Body)
						status := resp.StatusCode
						if _, err := c.wait(resp); err != nil {
							t.Fatalf("re-PUT %s: %v", res.Path, err)
						}
						if status != want {
							t.Errorf("re-PUT %s: status %d, recorded %d", typ, status, want)
						}
					}
					g := c.do(http.MethodGet, res.Path, "", nil)
					wantState := "Succeeded"
					if recordedWithoutProvisioningState[typ] {
						wantState = ""
					}
					if g.status != 200 || !strings.EqualFold(g.str("id"), strings.SplitN(res.Path, "?", 2)[0]) ||
						g.str("properties", "provisioningState") != wantState {
						t.Errorf("GET %s: %d %s", res.Path, g.status, g.raw)
					}
				}
				if len(next) == len(pending) {
					t.Fatalf("no progress: %d PUTs still miss their parent", len(next))
				}
				pending = next
			}
			for _, d := range set.DeleteOrder {
				resp := c.doResp(http.MethodDelete, d.Path, "", nil)
				status := resp.StatusCode
				if status == http.StatusAccepted {
					if _, err := c.wait(resp); err != nil {
						t.Fatalf("DELETE %s: %v", d.Path, err)
					}
				} else {
					resp.Body.Close()
				}
				if status != d.Status {
					t.Errorf("DELETE %s: status %d, recorded %d", d.Path, status, d.Status)
				}
			}
		})
	}
}

func firstSuccess(codes []int) int {
	for _, c := range codes {
		if c < 300 {
			return c
		}
	}
	return 0
}

func successes(codes []int) []int {
	var out []int
	for _, c := range codes {
		if c < 300 {
			out = append(out, c)
		}
	}
	return out
}

func typeOfPath(p string) string {
	p = strings.SplitN(p, "?", 2)[0]
	i := strings.LastIndex(strings.ToLower(p), "/providers/")
	if i < 0 {
		return "Microsoft.Resources/resourceGroups"
	}
	segs := strings.Split(p[i+len("/providers/"):], "/")
	out := segs[0]
	for j := 1; j < len(segs); j += 2 {
		out += "/" + segs[j]
	}
	return out
}
