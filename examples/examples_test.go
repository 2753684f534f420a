package examples_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
)

// varsRef names the ConfigMap holding the onboarding example's substitution variables
// (onboarding/platform/platform-vars.yaml), as given to --substitute-from; exportedRef the ConfigMap the
// team identity exports TEAM_A_CLIENT_ID into (its operatorSpec.configMapExpressions), the second source.
const (
	varsRef     = "platform/platform-vars"
	exportedRef = "ConfigMap/platform/team-a-vars"
)

// fakeClientID is the clientId the tests take as exported by platform/team-a-identity.
const fakeClientID = "00000000-0000-0000-0000-0000000000a1"

// afterIdentity is what gitaso's state holds once platform/team-a-identity is applied: its export
// platform/team-a-vars. firstRun is the state of a first run: nothing exported yet.
func afterIdentity(secret bool, ns, name string) (map[string]string, bool) {
	if !secret && ns == "platform" && name == "team-a-vars" {
		return map[string]string{"TEAM_A_CLIENT_ID": fakeClientID}, true
	}
	return nil, false
}

func firstRun(bool, string, string) (map[string]string, bool) { return nil, false }

// renderer is the render stage gitaso runs with `--substitute-from platform/platform-vars --substitute-from
// ConfigMap/platform/team-a-vars --substitute-strict`: Flux post-build substitution where an unset variable
// is an error, so a manifest cannot use a variable the two lack. exported is what the state holds.
func renderer(t *testing.T) *render.Renderer { return rendererWith(t, afterIdentity) }

func rendererWith(t *testing.T, exported render.ExportedData) *render.Renderer {
	t.Helper()
	var refs []render.Ref
	for _, s := range []string{varsRef, exportedRef} {
		ref, err := render.ParseRef(s)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	r, err := render.New(render.Options{Substitute: true, SubstituteFrom: refs, Strict: true, Exported: exported})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fetch reads the onboarding example as gitaso does (source.Dir), with the variables left as written when r
// is nil. (flux-helm/ is a Flux repository of its own, read with --flux: fluxhelm_test.go.)
func fetch(t *testing.T, r source.Renderer) *manifest.Snapshot {
	t.Helper()
	var opts []source.DirOption
	if r != nil {
		opts = append(opts, source.WithRenderer(r))
	}
	snap, err := source.NewDir(".", "onboarding", opts...).Fetch(t.Context())
	if err != nil {
		t.Fatalf("parse examples: %v", err)
	}
	if len(snap.Objects) == 0 {
		t.Fatal("no YAML documents found below examples/")
	}
	checkNoEmptyDocuments(t, snap)
	return snap
}

// platformVars returns the data of the ConfigMap platform/platform-vars as written in the repository.
func platformVars(t *testing.T) (map[string]string, manifest.Object) {
	t.Helper()
	for _, o := range fetch(t, nil).Objects {
		if o.IsConfigMap() && o.Namespace() == "platform" && o.Name() == "platform-vars" {
			data, err := manifest.ConfigMapData(o)
			if err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			return data, o
		}
	}
	t.Fatal("ConfigMap platform/platform-vars not found below examples/")
	return nil, manifest.Object{}
}

// subscription is the subscription of the global credential and of team-a's credential: variable
// SUBSCRIPTION_ID of platform-vars.
func subscription(t *testing.T) string {
	t.Helper()
	vars, _ := platformVars(t)
	sub := vars["SUBSCRIPTION_ID"]
	if !guidRE.MatchString(sub) {
		t.Fatalf("platform-vars SUBSCRIPTION_ID = %q, want a GUID", sub)
	}
	return sub
}

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// build renders the examples through gitaso's real render stage (see renderer) and runs gitaso's planner
// over them. planner.Build checks every apiVersion/kind against ASO's catalog and every spec field with its
// exact casing, type, enum values and required fields, and resolves owners, references, Secrets, exported
// ConfigMaps, credentials, duplicates and cycles; it returns every problem, so any error it reports fails
// the test here.
func build(t *testing.T) (*planner.Graph, *manifest.Snapshot) {
	t.Helper()
	snap := fetch(t, renderer(t))
	for _, o := range snap.Objects {
		if strings.Contains(fmt.Sprint(o.Content), "${") {
			t.Errorf("%s still holds a variable reference after substitution", o)
		}
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: subscription(t)})
	if err != nil {
		t.Fatalf("planner.Build rejects the examples:\n%v", err)
	}
	return g, snap
}

// checkNoEmptyDocuments fails when a file has a "---" that does not separate two documents (a comment-only
// or empty document, which some YAML readers reject): n documents, n-1 separators.
func checkNoEmptyDocuments(t *testing.T, snap *manifest.Snapshot) {
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

// gitaso accepts the examples once platform-vars' variables are substituted (see build), and plans every
// ASO object of them as a create with an ARM ID in platform-vars' subscription.
func TestExamplesPlan(t *testing.T) {
	g, snap := build(t)
	subscriptionID := subscription(t)
	plan, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	want := 0
	for _, o := range snap.Objects {
		if aso.IsASOGroup(o.Group()) {
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
// ARM type and parent of the declared kind, so the onboarding chain is closed once the variables are
// substituted; gitaso then orders the owner first.
func TestCrossNamespaceARMIDsResolve(t *testing.T) {
	g, _ := build(t)
	subscriptionID := subscription(t)
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
				t.Errorf("%s: owner.armId %q, want the SUBSCRIPTION_ID subscription", n.ID(), id)
			}
			continue
		}
		m := armIDPattern.FindStringSubmatch(id)
		if m == nil {
			t.Errorf("%s: owner.armId %q is not a resource-group-scoped ARM ID", n.ID(), id)
			continue
		}
		if m[1] != subscriptionID {
			t.Errorf("%s: owner.armId %q should use the SUBSCRIPTION_ID variable", n.ID(), id)
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
	byID := map[string]manifest.Object{}
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
	// As written, the credential takes its values from platform-vars' variables and the identity's export;
	// once rendered, it holds exactly those values.
	vars, _ := platformVars(t)
	g, rendered := build(t)
	renderedByID := map[string]manifest.Object{}
	for _, o := range rendered.Objects {
		renderedByID[o.ID()] = o
	}
	for _, c := range []struct {
		obj  manifest.Object
		want map[string]any
	}{
		{cred, map[string]any{
			"AZURE_SUBSCRIPTION_ID":      "${SUBSCRIPTION_ID}",
			"AZURE_TENANT_ID":            "${TENANT_ID}",
			"AZURE_CLIENT_ID":            "${TEAM_A_CLIENT_ID}",
			"USE_WORKLOAD_IDENTITY_AUTH": "true",
		}},
		{renderedByID[cred.ID()], map[string]any{
			"AZURE_SUBSCRIPTION_ID":      vars["SUBSCRIPTION_ID"],
			"AZURE_TENANT_ID":            vars["TENANT_ID"],
			"AZURE_CLIENT_ID":            fakeClientID, // exported by platform/team-a-identity
			"USE_WORKLOAD_IDENTITY_AUTH": "true",
		}},
	} {
		data, _ := c.obj.Content["stringData"].(map[string]any)
		if len(data) != len(c.want) {
			t.Errorf("team-a aso-credential has keys %v, want exactly %v", sortedKeys(data), sortedKeys(c.want))
		}
		for k, v := range c.want {
			if data[k] != v {
				t.Errorf("team-a aso-credential %s = %v, want %v", k, data[k], v)
			}
		}
	}

	fic, ok := byID["platform/FederatedIdentityCredential/team-a-identity-fic"]
	if !ok {
		t.Fatal("federated credential missing")
	}
	if got := fic.Spec()["issuer"]; got != "${CLUSTER_OIDC}" {
		t.Errorf("issuer = %v, want the cluster's OIDC issuer from platform-vars, ${CLUSTER_OIDC}", got)
	}
	if got := renderedByID[fic.ID()].Spec()["issuer"]; got != vars["CLUSTER_OIDC"] || !strings.HasPrefix(vars["CLUSTER_OIDC"], "https://") {
		t.Errorf("rendered issuer = %v, want platform-vars' CLUSTER_OIDC %q, an https URL", got, vars["CLUSTER_OIDC"])
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
		"platform": {"ConfigMap", "FederatedIdentityCredential", "FlexibleServer", "FlexibleServersFirewallRule", "Namespace", "ResourceGroup", "RoleAssignment", "RoleDefinition", "Secret", "UserAssignedIdentity"},
		"team-a":   {"FlexibleServersDatabase", "NamespacesQueue", "NamespacesTopic", "NamespacesTopicsSubscription", "Secret", "StorageAccount", "StorageAccountsBlobService", "StorageAccountsBlobServicesContainer"},
	} {
		if got := uniqueSorted(kinds[ns]); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("namespace %s kinds = %v, want %v", ns, got, want)
		}
	}

	// What gitaso makes of it: credentials per namespace, and role assignments that wait for the identity
	// whose exported principalId they read.
	subscriptionID := vars["SUBSCRIPTION_ID"]
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

// exportedVars are the keys the example's resources export into the ConfigMap platform/team-a-vars
// (operatorSpec.configMaps and configMapExpressions): variables that need no one to copy them.
func exportedVars(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, o := range fetch(t, nil).Objects {
		op, _ := o.Spec()["operatorSpec"].(map[string]any)
		if op == nil || o.Namespace() != "platform" {
			continue
		}
		exprs, _ := op["configMapExpressions"].([]any)
		for _, e := range exprs {
			if m, _ := e.(map[string]any); m["name"] == "team-a-vars" {
				out[fmt.Sprint(m["key"])] = true
			}
		}
		cms, _ := op["configMaps"].(map[string]any)
		for _, d := range cms {
			if m, _ := d.(map[string]any); m["name"] == "team-a-vars" {
				out[fmt.Sprint(m["key"])] = true
			}
		}
	}
	return out
}

// The seeds' whole onboarding from one commit: on the first run nothing is exported yet, so team-a's
// credential (its clientId comes from platform/team-a-vars) and every team-a resource signing in with it are
// "(known after apply)": the platform is planned now, team-a once the identity has exported its clientId.
// Nothing is deleted or refused meanwhile, and the plan says what each deferred object waits for.
func TestOnboardingFromOneCommit(t *testing.T) {
	snap := fetch(t, rendererWith(t, firstRun))
	g, err := planner.Build(snap, planner.Options{SubscriptionID: subscription(t)})
	if err != nil {
		t.Fatalf("planner.Build on the first run:\n%v", err)
	}
	after, _ := build(t)
	if len(g.Deferred) == 0 {
		t.Fatal("nothing is known after apply on the first run")
	}
	for _, d := range g.Deferred {
		if d.Namespace != "team-a" {
			t.Errorf("%s is deferred: only team-a waits for the identity", d.ID())
		}
	}
	for _, n := range g.Nodes {
		if n.Namespace != "platform" {
			t.Errorf("%s is planned before team-a's credential exists", n.ID())
		}
	}
	var team int
	for _, n := range after.Nodes {
		if n.Namespace == "team-a" {
			team++
		}
	}
	if len(g.Deferred) != team || len(g.Nodes)+len(g.Deferred) != len(after.Nodes) {
		t.Errorf("first run: %d planned + %d deferred; after the identity: %d resources, %d of team-a", len(g.Nodes), len(g.Deferred), len(after.Nodes), team)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"team-a/StorageAccount/teamastorage01 is known after apply: waits for its credential secret team-a/aso-credential (${TEAM_A_CLIENT_ID} from config map platform/team-a-vars, exported by platform/UserAssignedIdentity/team-a-identity)",
		fmt.Sprintf("%d known after apply", len(g.Deferred)),
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the first run's plan lacks %q:\n%s", want, text.String())
		}
	}
}

// varRefRE finds Flux variable references: ${...} with any run of '$' before it. An odd run ends in an
// escape ($${VAR} is a literal ${VAR}, $$ a literal $), an even one (usually none) is a reference.
var varRefRE = regexp.MustCompile(`(\$*)\$\{([^}]*)\}`)

// varNameRE is the variable name at the start of an expression (${VAR}, ${VAR:=default}, ${VAR:-x}, ...).
var varNameRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*`)

// Every ${VAR} used in a manifest is defined in the ConfigMap platform/platform-vars, and every variable
// defined there is used and documented in the file's comments, so `--substitute-from platform/platform-vars
// --substitute-strict` leaves nothing behind and the ConfigMap holds nothing stale. The example values are
// well-formed (GUIDs, an https URL) so that gitaso validates and plans the example as it is.
func TestVariablesDefined(t *testing.T) {
	vars, cm := platformVars(t)
	if len(vars) == 0 {
		t.Fatal("platform-vars defines no variable")
	}
	exported := exportedVars(t)
	if len(exported) == 0 {
		t.Fatal("no resource exports a variable into platform/team-a-vars")
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
	var comments []string
	for _, file := range files {
		for n, line := range strings.Split(string(file.Data), "\n") {
			if file.Path == cm.File && strings.HasPrefix(strings.TrimSpace(line), "#") {
				comments = append(comments, line)
			}
			for _, m := range varRefRE.FindAllStringSubmatch(line, -1) {
				if len(m[1])%2 == 1 {
					continue // escaped: a literal ${...}
				}
				name := varNameRE.FindString(m[2])
				if name == "" || !render.ValidName(name) {
					t.Errorf("%s:%d: %q is not a variable reference Flux accepts", file.Path, n+1, m[0])
					continue
				}
				used[name] = true
				if _, ok := vars[name]; !ok && !exported[name] {
					t.Errorf("%s:%d uses ${%s}, which neither platform-vars defines nor a resource exports into platform/team-a-vars", file.Path, n+1, name)
				}
			}
		}
	}
	for name, v := range vars {
		if !used[name] {
			t.Errorf("platform-vars defines %s, which no manifest uses", name)
		}
		documented := false
		for _, c := range comments {
			documented = documented || slices.Contains(strings.FieldsFunc(c, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }), name)
		}
		if !documented {
			t.Errorf("%s: variable %s is not explained in the file's comments", cm.File, name)
		}
		switch {
		case strings.HasSuffix(name, "_ID"):
			if !guidRE.MatchString(v) {
				t.Errorf("platform-vars %s = %q, want a GUID", name, v)
			}
		case strings.HasSuffix(name, "_OIDC"):
			if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" {
				t.Errorf("platform-vars %s = %q, want an https URL", name, v)
			}
		}
	}
	for _, want := range []string{"SUBSCRIPTION_ID", "TENANT_ID", "TEAM_A_CLIENT_ID", "CLUSTER_OIDC"} {
		if !used[want] {
			t.Errorf("no manifest uses ${%s}", want)
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

// TestPlanJSONRoundTrip writes the onboarding plan to JSON, reads it back,
// and builds every request again from the read-back plan alone (and the
// repository's Secrets): each is byte for byte the request of the plan in
// memory, with and without the values known only after apply.
func TestPlanJSONRoundTrip(t *testing.T) {
	g, _ := build(t)
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back planner.Plan
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	// Every export of the plan, with a made-up value.
	outs := planner.Outputs{}
	for _, r := range p.Resources {
		for _, ex := range r.ExportRules {
			outs[planner.OutputKey(r.Namespace, ex.Secret, ex.Name, ex.Key)] = "value-of-" + ex.Name + "-" + ex.Key
		}
	}
	resolved := 0
	for i, r := range p.Resources {
		if r.Manifest == nil {
			continue
		}
		for _, v := range []planner.Values{{Secrets: g}, {Secrets: g, Outputs: outs}} {
			want, err := planner.Resolve(r, v)
			if err != nil {
				t.Fatalf("%s: %v", r.ID(), err)
			}
			got, err := planner.Resolve(back.Resources[i], v)
			if err != nil {
				t.Fatalf("%s read back: %v", r.ID(), err)
			}
			if string(got.JSON) != string(want.JSON) || strings.Join(got.Unknown, ",") != strings.Join(want.Unknown, ",") {
				t.Errorf("%s: read back gives\n%s\nwant\n%s", r.ID(), got.JSON, want.JSON)
			}
			resolved++
		}
	}
	if resolved < 2*10 {
		t.Errorf("only %d requests compared", resolved)
	}
	for _, r := range p.Resources {
		if r.Inputs != nil && len(r.Inputs.Secrets) > 0 {
			return
		}
	}
	t.Errorf("no resource of the example reads a Secret: the round trip of secret inputs is untested")
}
