package examples_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/benchdata/schemacheck"
)

// asoSchemaDir returns ../../shared/aso-schema (or $GITASO_SHARED_DIR/aso-schema), skipping the test
// when it is absent.
func asoSchemaDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GITASO_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	dir = filepath.Join(dir, "aso-schema")
	if _, err := os.Stat(filepath.Join(dir, "kinds.json")); err != nil {
		t.Skipf("ASO facts catalog not found (%v): set GITASO_SHARED_DIR to the shared directory to run this test", err)
	}
	return dir
}

func readAll(t *testing.T) []schemacheck.Doc {
	t.Helper()
	docs, err := schemacheck.ReadDir(".")
	if err != nil {
		t.Fatalf("parse examples: %v", err)
	}
	if len(docs) == 0 {
		t.Fatal("no YAML documents found below examples/")
	}
	// No comment-only or empty documents (some YAML readers reject them): n documents, n-1 separators.
	perFile := map[string]int{}
	for _, d := range docs {
		perFile[d.File]++
	}
	for f, n := range perFile {
		data, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		if seps := strings.Count("\n"+string(data), "\n---\n"); seps != n-1 {
			t.Errorf("%s: %d documents but %d separators", f, n, seps)
		}
	}
	return docs
}

// Every document parses, names its namespace explicitly and is an ASO kind, a Secret or a ConfigMap.
func TestExamplesParse(t *testing.T) {
	for _, d := range readAll(t) {
		meta, _ := d.Content["metadata"].(map[string]any)
		if ns, _ := meta["namespace"].(string); ns == "" {
			t.Errorf("%s:%d: %s has no metadata.namespace", d.File, d.Line, d.ID())
		}
		if !strings.HasSuffix(d.Group(), ".azure.com") && !(d.APIVersion() == "v1" && (d.Kind() == "Secret" || d.Kind() == "ConfigMap")) {
			t.Errorf("%s:%d: %s %s would be ignored by gitaso", d.File, d.Line, d.APIVersion(), d.Kind())
		}
	}
}

// Every apiVersion/kind exists in ASO's facts catalog and every spec field exists there with its exact casing,
// type and enum values; owners, references, Secrets and ConfigMaps resolve.
func TestExamplesMatchSchema(t *testing.T) {
	cat, err := schemacheck.Load(asoSchemaDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cat.Check(readAll(t)) {
		t.Error(e)
	}
}

var armIDPattern = regexp.MustCompile(`^/subscriptions/([^/]+)/resourceGroups/([^/]+)(?:/providers/([^/]+)/(.+))?$`)

// Owners given by ARM ID across namespaces point at resources the repository itself declares, with the
// ARM type of the declared kind, so the onboarding chain is closed once the placeholders are filled in.
func TestCrossNamespaceARMIDsResolve(t *testing.T) {
	cat, err := schemacheck.Load(asoSchemaDir(t))
	if err != nil {
		t.Fatal(err)
	}
	docs := readAll(t)
	type decl struct{ armType, name, parent string }
	declared := map[decl]string{} // → object ID
	azureName := func(d schemacheck.Doc) string {
		if s, _ := d.Spec()["azureName"].(string); s != "" {
			return s
		}
		return d.Name()
	}
	for _, d := range docs {
		k, ok := cat.Lookup(d.Group(), d.Version(), d.Kind())
		if !ok {
			continue
		}
		parent := ""
		if o, _ := d.Spec()["owner"].(map[string]any); o != nil {
			parent, _ = o["name"].(string)
		}
		declared[decl{strings.ToLower(k.ARMType), azureName(d), parent}] = d.ID()
	}
	checked := 0
	for _, d := range docs {
		o, _ := d.Spec()["owner"].(map[string]any)
		id, _ := o["armId"].(string)
		if id == "" || d.Kind() == "RoleDefinition" { // a subscription scope is not declared anywhere
			continue
		}
		m := armIDPattern.FindStringSubmatch(id)
		if m == nil {
			t.Errorf("%s: owner.armId %q is not a resource-group-scoped ARM ID", d.ID(), id)
			continue
		}
		if m[1] != "__SUBSCRIPTION_ID__" {
			t.Errorf("%s: owner.armId %q should use the __SUBSCRIPTION_ID__ placeholder", d.ID(), id)
		}
		rg := m[2]
		if _, ok := declared[decl{"microsoft.resources/resourcegroups", rg, ""}]; !ok {
			t.Errorf("%s: resource group %q of owner.armId is not declared in the repository", d.ID(), rg)
		}
		if m[3] != "" {
			segs := strings.Split(m[4], "/")
			if len(segs) != 2 {
				t.Errorf("%s: owner.armId %q: only one level below the provider is used in the examples", d.ID(), id)
				continue
			}
			armType := strings.ToLower(m[3] + "/" + segs[0])
			if _, ok := declared[decl{armType, segs[1], rg}]; !ok {
				t.Errorf("%s: owner.armId %q names no %s %q owned by resource group %q in the repository", d.ID(), id, m[3]+"/"+segs[0], segs[1], rg)
			}
		}
		checked++
	}
	if checked < 4 {
		t.Errorf("checked %d cross-namespace owners, want at least 4 (queue, topic, database, storage account)", checked)
	}
}

// The onboarding scenario of the seeds is all there: the platform namespace uses the global credential,
// the team namespace a workload-identity credential for the identity the platform creates, and the three
// role assignments read that identity's principalId from its exported ConfigMap.
func TestOnboardingScenario(t *testing.T) {
	byID := map[string]schemacheck.Doc{}
	kinds := map[string][]string{} // namespace → sorted kinds
	for _, d := range readAll(t) {
		if !strings.HasPrefix(d.File, "onboarding/") {
			continue
		}
		byID[d.ID()] = d
		kinds[d.Namespace()] = append(kinds[d.Namespace()], d.Kind())
	}
	if _, ok := byID["platform/Secret/aso-credential"]; ok {
		t.Error("platform must use the global credential, but has an aso-credential Secret")
	}
	cred, ok := byID["team-a/Secret/aso-credential"]
	if !ok {
		t.Fatal("team-a/Secret/aso-credential missing")
	}
	data, _ := cred.Content["stringData"].(map[string]any)
	want := map[string]any{
		"AZURE_SUBSCRIPTION_ID":      "__SUBSCRIPTION_ID__",
		"AZURE_TENANT_ID":            "__TENANT_ID__",
		"AZURE_CLIENT_ID":            "__TEAM_A_CLIENT_ID__",
		"USE_WORKLOAD_IDENTITY_AUTH": "true",
	}
	if len(data) != len(want) {
		t.Errorf("team-a aso-credential has keys %v, want exactly %v", sortedKeys(data), sortedKeys(want))
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("team-a aso-credential %s = %v, want %v", k, data[k], v)
		}
	}

	fic, ok := byID["platform/FederatedIdentityCredential/team-a-identity-fic"]
	if !ok {
		t.Fatal("federated credential missing")
	}
	if got := fic.Spec()["issuer"]; got != "https://oidc.gitaso.local/cluster-01/" {
		t.Errorf("issuer = %v", got)
	}
	if got := fic.Spec()["subject"]; got != "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default" {
		t.Errorf("subject = %v", got)
	}

	uai := byID["platform/UserAssignedIdentity/team-a-identity"]
	cms, _ := uai.Spec()["operatorSpec"].(map[string]any)["configMaps"].(map[string]any)
	for _, k := range []string{"principalId", "clientId", "tenantId"} {
		dest, _ := cms[k].(map[string]any)
		if dest["name"] != "team-a-identity-settings" || dest["key"] != k {
			t.Errorf("identity export %s = %v, want team-a-identity-settings/%s", k, dest, k)
		}
	}

	scopes := map[string]bool{}
	for id, d := range byID {
		if d.Kind() != "RoleAssignment" {
			continue
		}
		from, _ := d.Spec()["principalIdFromConfig"].(map[string]any)
		if from["name"] != "team-a-identity-settings" || from["key"] != "principalId" {
			t.Errorf("%s: principalIdFromConfig = %v", id, from)
		}
		owner, _ := d.Spec()["owner"].(map[string]any)
		scopes[owner["kind"].(string)+"/"+owner["name"].(string)] = true
	}
	for _, s := range []string{"ResourceGroup/team-a-rg", "Namespace/snd-infra-sb01", "FlexibleServer/snd-infra-pg01"} {
		if !scopes[s] {
			t.Errorf("no role assignment for team-a on %s (have %v)", s, scopes)
		}
	}

	for ns, want := range map[string][]string{
		"platform": {"FederatedIdentityCredential", "FlexibleServer", "FlexibleServersFirewallRule", "Namespace", "ResourceGroup", "RoleAssignment", "RoleDefinition", "Secret", "UserAssignedIdentity"},
		"team-a":   {"FlexibleServersDatabase", "NamespacesQueue", "NamespacesTopic", "NamespacesTopicsSubscription", "Secret", "StorageAccount", "StorageAccountsBlobService", "StorageAccountsBlobServicesContainer"},
	} {
		if got := uniqueSorted(kinds[ns]); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("namespace %s kinds = %v, want %v", ns, got, want)
		}
	}
}

// Every __TOKEN__ used in a manifest is listed in placeholders.txt (TOKEN=description) and every listed token
// is used, so the demo's substitution leaves nothing behind.
func TestPlaceholdersListed(t *testing.T) {
	f, err := os.Open(filepath.Join("onboarding", "placeholders.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	tokenRE := regexp.MustCompile(`__[A-Z0-9_]+?__`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tok, desc, ok := strings.Cut(line, "=")
		if !ok || !tokenRE.MatchString(tok) || tokenRE.FindString(tok) != tok || strings.TrimSpace(desc) == "" {
			t.Errorf("placeholders.txt:%d: %q is not TOKEN=description", n, line)
			continue
		}
		listed[tok] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	err = filepath.WalkDir("onboarding", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, tok := range tokenRE.FindAllString(string(data), -1) {
			used[tok] = true
			if !listed[tok] {
				t.Errorf("%s uses %s, which placeholders.txt does not list", p, tok)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for tok := range listed {
		if !used[tok] {
			t.Errorf("placeholders.txt lists %s, which no manifest uses", tok)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func uniqueSorted(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
