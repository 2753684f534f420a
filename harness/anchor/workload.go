package anchor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// zeroSubscription is the subscription (and tenant) ID ASO's samples and gitaso's generators write.
const zeroSubscription = "00000000-0000-0000-0000-000000000000"

// Workload is a set of manifests both sides apply: Write fills an empty directory with them.
type Workload struct {
	Name  string
	Write func(dir string) error
	// Note says how the manifests differ from their source, for the results page.
	Note string
}

// Tree is the apply benchmark's repository (harness/benchdata): n resources, resource group → Service Bus
// namespace → queue, in the namespace "bench".
func Tree(n int) Workload {
	return Workload{Name: fmt.Sprintf("tree-%d", n), Note: "harness/benchdata.GenerateApplyTree, subscription set to the emulator's",
		Write: func(dir string) error {
			if err := benchdata.GenerateApplyTree(dir, n); err != nil {
				return err
			}
			return rewriteFiles(dir, strings.NewReplacer(zeroSubscription, emulator.DefaultSubscriptionID))
		}}
}

// Onboarding is examples/onboarding with platform-vars' values set to the emulator's subscription and tenant
// and team-a's workload-identity aso-credential left out: every resource uses the global credential on both
// sides (ASO reads a workload identity token only from a fixed path of a pod).
func Onboarding(examples string) Workload {
	return Workload{Name: "onboarding", Note: "examples/onboarding: ${SUBSCRIPTION_ID}, ${TENANT_ID}, ${CLUSTER_OIDC} substituted, " +
		"team-a/" + aso.NamespaceCredentialSecret + " left out (global credential for every namespace)",
		Write: func(dir string) error {
			src := filepath.Join(examples, "onboarding")
			r := strings.NewReplacer("${SUBSCRIPTION_ID}", emulator.DefaultSubscriptionID, "${TENANT_ID}", emulator.DefaultTenantID,
				"${CLUSTER_OIDC}", "https://oidc.gitaso.local/cluster-01/")
			return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || filepath.Base(p) == aso.NamespaceCredentialSecret+".yaml" ||
					filepath.Base(p) == "platform-vars.yaml" {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return fmt.Errorf("anchor: onboarding: %w", err)
				}
				rel, _ := filepath.Rel(src, p)
				out := filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "-"))
				return os.WriteFile(out, []byte(r.Replace(string(b))), 0o644)
			})
		}}
}

// expectedSet is the part of a conformance set's expected.json the harness reads.
type expectedSet struct {
	ExcludedSamples []struct {
		File string `json:"file"`
	} `json:"excludedSamples"`
	TestInputs struct {
		Secrets map[string]map[string]string `json:"secrets"`
	} `json:"testInputs"`
	Resources []struct {
		File           string `json:"file"`
		OwnerYaml      string `json:"ownerYaml"`
		OwnerEffective string `json:"ownerEffective"`
	} `json:"resources"`
}

// Conformance is every set of shared/conformance/aso, each in its own namespace (the group's name) with its own
// resource group aso-sample-rg-{group} (the samples' owner aso-sample-rg, renamed through azureName), owners
// fixed as ASO's samples test fixes them (expected.json ownerEffective), the zero subscription set to the
// emulator's, and a Secret for each secret input the test generates (same value on both sides).
func Conformance(shared string) Workload {
	return Workload{Name: "conformance", Note: "shared/conformance/aso: one namespace and resource group per set, owners as ASO's samples test fixes them",
		Write: func(dir string) error {
			root := filepath.Join(shared, "conformance", "aso")
			sets, err := filepath.Glob(filepath.Join(root, "*", "*", "expected.json"))
			if err != nil || len(sets) == 0 {
				return fmt.Errorf("anchor: no conformance sets under %s", root)
			}
			sort.Strings(sets)
			for _, exp := range sets {
				if err := writeSet(dir, filepath.Dir(exp), exp); err != nil {
					return err
				}
			}
			return nil
		}}
}

func writeSet(out, setDir, expFile string) error {
	b, err := os.ReadFile(expFile)
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	var exp expectedSet
	if err := json.Unmarshal(b, &exp); err != nil {
		return fmt.Errorf("anchor: %s: %w", expFile, err)
	}
	group := filepath.Base(filepath.Dir(setDir))
	ns := group
	rgName := "aso-sample-rg-" + group
	excluded := map[string]bool{}
	for _, x := range exp.ExcludedSamples {
		excluded[x.File] = true
	}
	owners := map[string][2]string{}
	for _, r := range exp.Resources {
		if r.OwnerEffective != "" && r.OwnerYaml != "" {
			owners[r.File] = [2]string{r.OwnerYaml, r.OwnerEffective}
		}
	}
	rewrite := strings.NewReplacer(zeroSubscription, emulator.DefaultSubscriptionID, "/resourceGroups/aso-sample-rg/", "/resourceGroups/"+rgName+"/")
	var docs []map[string]any
	hasRG := false
	err = filepath.WalkDir(setDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || excluded[filepath.Base(p)] {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		objs, err := source.ParseFile(p, []byte(rewrite.Replace(string(data))))
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		for _, o := range objs {
			c := o.Content
			md, _ := c["metadata"].(map[string]any)
			md["namespace"] = ns
			if fix, ok := owners[filepath.Base(p)]; ok {
				if spec, _ := c["spec"].(map[string]any); spec != nil {
					if own, _ := spec["owner"].(map[string]any); own != nil && own["name"] == fix[0] {
						own["name"] = fix[1]
					}
				}
			}
			if c["kind"] == "ResourceGroup" && md["name"] == "aso-sample-rg" {
				spec, _ := c["spec"].(map[string]any)
				spec["azureName"] = rgName
				hasRG = true
			}
			docs = append(docs, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !hasRG {
		docs = append(docs, map[string]any{"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
			"metadata": map[string]any{"name": "aso-sample-rg", "namespace": ns},
			"spec":     map[string]any{"azureName": rgName, "location": "westus2"}})
	}
	for name, keys := range exp.TestInputs.Secrets {
		data := map[string]any{}
		for k := range keys {
			data[k] = "anchor-Pass-" + k + "-7f3a9c2e" // the same on both sides, so the bodies compare equal
		}
		docs = append(docs, map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": ns}, "stringData": data})
	}
	var buf strings.Builder
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return fmt.Errorf("anchor: %s: %w", setDir, err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	name := group + "-" + filepath.Base(setDir) + ".yaml"
	return os.WriteFile(filepath.Join(out, name), []byte(buf.String()), 0o644)
}

func rewriteFiles(dir string, r *strings.Replacer) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		return os.WriteFile(p, []byte(r.Replace(string(b))), 0o644)
	})
}

// isASO reports whether an object is an ASO resource (group *.azure.com).
func isASO(o manifest.Object) bool { return aso.IsASOGroup(o.Group()) }
