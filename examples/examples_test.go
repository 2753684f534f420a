package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// placeholderValues fill in the tokens of onboarding/placeholders.txt the way `make demo` does, with fixed
// GUIDs, so that the ARM IDs gitaso computes are realistic.
var placeholderValues = map[string]string{
	"__SUBSCRIPTION_ID__":  subscriptionID,
	"__TENANT_ID__":        "72f988bf-86f1-41af-91ab-2d7cd011db47",
	"__TEAM_A_CLIENT_ID__": "4b0d3c2a-9e8f-4a1b-8c7d-6e5f4a3b2c1d",
}

// subscriptionID is the subscription of the global credential and of team-a's credential.
const subscriptionID = "3f2c9a6e-1b7d-4e58-a0c4-8d5e6f7a8b9c"

var tokenRE = regexp.MustCompile(`__[A-Z0-9_]+?__`)

// substitute is a source.Renderer replacing the placeholders; a token it does not know is an error, so
// that a new placeholder cannot slip through unreplaced.
type substitute map[string]string

func (s substitute) Render(_ context.Context, files []source.File) ([]source.File, error) {
	out := make([]source.File, len(files))
	for i, f := range files {
		data := f.Data
		for tok, v := range s {
			data = bytes.ReplaceAll(data, []byte(tok), []byte(v))
		}
		if tok := tokenRE.Find(data); tok != nil {
			return nil, fmt.Errorf("%s: placeholder %s has no test value", f.Path, tok)
		}
		out[i] = source.File{Path: f.Path, Data: data}
	}
	return out, nil
}

// fetch reads the examples as gitaso does (source.Dir), with the placeholders left as written when r is nil.
func fetch(t *testing.T, r source.Renderer) *source.Snapshot {
	t.Helper()
	var opts []source.DirOption
	if r != nil {
		opts = append(opts, source.WithRenderer(r))
	}
	snap, err := source.NewDir(".", "", opts...).Fetch(t.Context())
	if err != nil {
		t.Fatalf("parse examples: %v", err)
	}
	if len(snap.Objects) == 0 {
		t.Fatal("no YAML documents found below examples/")
	}
	checkNoEmptyDocuments(t, snap)
	return snap
}

// build runs gitaso's planner over the examples with the placeholders filled in. planner.Build checks every
// apiVersion/kind against ASO's catalog and every spec field with its exact casing, type, enum values and
// required fields, and resolves owners, references, Secrets, exported ConfigMaps, credentials, duplicates and
// cycles; it returns every problem, so any error it reports fails the test here.
func build(t *testing.T) (*planner.Graph, *source.Snapshot) {
	t.Helper()
	snap := fetch(t, substitute(placeholderValues))
	g, err := planner.Build(snap, planner.Options{SubscriptionID: subscriptionID})
	if err != nil {
		t.Fatalf("planner.Build rejects the examples:\n%v", err)
	}
	return g, snap
}

// checkNoEmptyDocuments fails when a file has a "---" that does not separate two documents (a comment-only
// or empty document, which some YAML readers reject): n documents, n-1 separators.
func checkNoEmptyDocuments(t *testing.T, snap *source.Snapshot) {
	t.Helper()
	perFile := map[string]int{}
	for _, o := range slices.Concat(snap.Objects, snap.Ignored) {
		perFile[o.File]++
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
}

// Every document parses, names its namespace explicitly and is an ASO kind, a Secret or a ConfigMap.
func TestExamplesParse(t *testing.T) {
	snap := fetch(t, nil)
	for _, o := range snap.Ignored {
		t.Errorf("%s: %s %s would be ignored by gitaso", o, o.APIVersion(), o.Kind())
	}
	for _, o := range snap.Objects {
		meta, _ := o.Content["metadata"].(map[string]any)
		if ns, _ := meta["namespace"].(string); ns == "" {
			t.Errorf("%s has no metadata.namespace", o)
		}
	}
}

// gitaso accepts the examples as they are once the placeholders are filled in (see build), and plans every
// ASO object of them as a create with an ARM ID in the placeholder subscription.
func TestExamplesPlan(t *testing.T) {
	g, snap := build(t)
	plan, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	want := 0
	for _, o := range snap.Objects {
		if o.IsASO() {
			want++
		}
	}
	if len(plan.Resources) != want || len(g.Nodes) != want {
		t.Errorf("plan has %d resources, graph %d nodes, want the %d ASO objects", len(plan.Resources), len(g.Nodes), want)
	}
	for _, r := range plan.Resources {
		if r.Action != planner.Create || r.Request == nil {
			t.Errorf("%s: action %v, request %v; want a create with a request", r.ID(), r.Action, r.Request)
		}
		if !strings.HasPrefix(r.ARMID, "/subscriptions/"+subscriptionID+"/") {
			t.Errorf("%s: ARM ID %s is not in subscription %s", r.ID(), r.ARMID, subscriptionID)
		}
	}
}

var armIDPattern = regexp.MustCompile(`^/subscriptions/([^/]+)/resourceGroups/([^/]+)(?:/providers/([^/]+)/(.+))?$`)

// Owners given by ARM ID across namespaces point at resources the repository itself declares, with the
// ARM type and parent of the declared kind, so the onboarding chain is closed once the placeholders are
// filled in; gitaso then orders the owner first.
func TestCrossNamespaceARMIDsResolve(t *testing.T) {
	g, _ := build(t)
	byARMID := map[string]*planner.Node{}
	for _, n := range g.Nodes {
		byARMID[strings.ToLower(n.ARMID)] = n
	}
	checked := 0
	for _, n := range g.Nodes {
		o, _ := n.Spec["owner"].(map[string]any)
		id, _ := o["armId"].(string)
		if id == "" {
			continue
		}
		if n.Kind.Kind == "RoleDefinition" { // a subscription scope is not declared anywhere
			if id != "/subscriptions/"+subscriptionID {
				t.Errorf("%s: owner.armId %q, want the __SUBSCRIPTION_ID__ subscription", n.ID(), id)
			}
			continue
		}
		m := armIDPattern.FindStringSubmatch(id)
		if m == nil {
			t.Errorf("%s: owner.armId %q is not a resource-group-scoped ARM ID", n.ID(), id)
			continue
		}
		if m[1] != subscriptionID {
			t.Errorf("%s: owner.armId %q should use the __SUBSCRIPTION_ID__ placeholder", n.ID(), id)
		}
		if rg := byARMID[strings.ToLower("/subscriptions/"+m[1]+"/resourceGroups/"+m[2])]; rg == nil || rg.Kind.Kind != "ResourceGroup" {
			t.Errorf("%s: resource group %q of owner.armId is not declared in the repository", n.ID(), m[2])
		}
		owner := byARMID[strings.ToLower(id)]
		if owner == nil {
			t.Errorf("%s: owner.armId %q names no resource the repository declares", n.ID(), id)
			continue
		}
		if m[3] != "" {
			if segs := strings.Split(m[4], "/"); len(segs) != 2 {
				t.Errorf("%s: owner.armId %q: only one level below the provider is used in the examples", n.ID(), id)
			} else if want := m[3] + "/" + segs[0]; !strings.EqualFold(owner.Kind.ARMType, want) {
				t.Errorf("%s: owner.armId %q names a %s, but %s is a %s", n.ID(), id, want, owner.ID(), owner.Kind.ARMType)
			}
		}
		if owner.Namespace == n.Namespace {
			t.Errorf("%s: owner %s is in the same namespace; use owner.name", n.ID(), owner.ID())
		}
		if n.OwnerKey() != owner.Key() || !slices.Contains(n.DependsOn, owner.Key()) {
			t.Errorf("%s: gitaso does not wait for its owner %s (owner key %q, depends on %v)", n.ID(), owner.ID(), n.OwnerKey(), n.DependsOn)
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
	byID := map[string]source.Object{}
	kinds := map[string][]string{} // namespace → sorted kinds
	for _, o := range fetch(t, nil).Objects {
		if !strings.HasPrefix(o.File, "onboarding/") {
			continue
		}
		byID[o.ID()] = o
		kinds[o.Namespace()] = append(kinds[o.Namespace()], o.Kind())
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

	for ns, want := range map[string][]string{
		"platform": {"FederatedIdentityCredential", "FlexibleServer", "FlexibleServersFirewallRule", "Namespace", "ResourceGroup", "RoleAssignment", "RoleDefinition", "Secret", "UserAssignedIdentity"},
		"team-a":   {"FlexibleServersDatabase", "NamespacesQueue", "NamespacesTopic", "NamespacesTopicsSubscription", "Secret", "StorageAccount", "StorageAccountsBlobService", "StorageAccountsBlobServicesContainer"},
	} {
		if got := uniqueSorted(kinds[ns]); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("namespace %s kinds = %v, want %v", ns, got, want)
		}
	}

	// What gitaso makes of it: credentials per namespace, and role assignments that wait for the identity
	// whose exported principalId they read.
	g, _ := build(t)
	var identity *planner.Node
	for _, n := range g.Nodes {
		if n.ID() == "platform/UserAssignedIdentity/team-a-identity" {
			identity = n
		}
	}
	if identity == nil {
		t.Fatal("platform/UserAssignedIdentity/team-a-identity is not in the graph")
	}
	scopes := map[string]bool{}
	for _, n := range g.Nodes {
		switch n.Namespace {
		case "platform":
			if n.Credential != "global" || n.Subscription != subscriptionID {
				t.Errorf("%s: credential %q, subscription %q; want the global credential", n.ID(), n.Credential, n.Subscription)
			}
		case "team-a":
			if n.Credential != "team-a/aso-credential" || n.Subscription != subscriptionID {
				t.Errorf("%s: credential %q, subscription %q; want team-a/aso-credential", n.ID(), n.Credential, n.Subscription)
			}
		}
		if n.Kind.Kind != "RoleAssignment" {
			continue
		}
		from, _ := n.Spec["principalIdFromConfig"].(map[string]any)
		if from["name"] != "team-a-identity-settings" || from["key"] != "principalId" {
			t.Errorf("%s: principalIdFromConfig = %v", n.ID(), from)
		}
		if !slices.Contains(n.DependsOn, identity.Key()) {
			t.Errorf("%s does not wait for %s (depends on %v)", n.ID(), identity.ID(), n.DependsOn)
		}
		if owner := g.Node(n.OwnerKey()); owner != nil {
			scopes[owner.Kind.Kind+"/"+owner.Name] = true
		}
	}
	for _, s := range []string{"ResourceGroup/team-a-rg", "Namespace/snd-infra-sb01", "FlexibleServer/snd-infra-pg01"} {
		if !scopes[s] {
			t.Errorf("no role assignment for team-a on %s (have %v)", s, scopes)
		}
	}
}

// Every __TOKEN__ used in a manifest is listed in placeholders.txt (TOKEN=description) and every listed token
// is used, so the demo's substitution leaves nothing behind; the tests have a value for each.
func TestPlaceholdersListed(t *testing.T) {
	f, err := os.Open(filepath.Join("onboarding", "placeholders.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
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
		if _, ok := placeholderValues[tok]; !ok {
			t.Errorf("placeholders.txt lists %s, which has no value in placeholderValues", tok)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The files gitaso reads: every *.yaml/*.yml below onboarding/, hidden directories skipped.
	files, err := source.NewDir(".", "onboarding").Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests below onboarding/")
	}
	used := map[string]bool{}
	for _, file := range files {
		for _, tok := range tokenRE.FindAllString(string(file.Data), -1) {
			used[tok] = true
			if !listed[tok] {
				t.Errorf("%s uses %s, which placeholders.txt does not list", file.Path, tok)
			}
		}
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
