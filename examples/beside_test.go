package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/internal/cli"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// writeLog counts the emulator's ARM writes (WithWriteLog).
type writeLog struct {
	mu   sync.Mutex
	recs []emulator.WriteRecord
}

func (l *writeLog) add(r emulator.WriteRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
}

// since returns the writes logged after the first n records; Resource Graph's queries (POSTs that only
// read) are left out.
func (l *writeLog) since(n int) []emulator.WriteRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []emulator.WriteRecord
	for _, r := range l.recs[n:] {
		if r.Method == "POST" && strings.EqualFold(r.Path, "/providers/Microsoft.ResourceGraph/resources") {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (l *writeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// asoWorld is the onboarding example as ASO leaves it: its platform resources in the emulator (applied
// from the example), and an ASO object for each in a real kube-apiserver holding CRDs made from the
// catalog, with status.id and Ready True.
type asoWorld struct {
	emu     *emutest.Env
	log     *writeLog
	kube    *kubetest.Env
	dyn     dynamic.Interface
	cluster *cluster.Cluster
	applied []record.Resource
}

func newASOWorld(t *testing.T) *asoWorld {
	t.Helper()
	w := &asoWorld{log: &writeLog{}}
	w.emu = emutest.New(t, emutest.Emulator(emulator.WithSubscriptionID(subscription(t)), emulator.WithWriteLog(w.log.add)))
	w.kube = kubetest.Start(t)
	w.kube.Namespace(t, "platform")
	w.kube.Namespace(t, "team-a")
	var err error
	if w.cluster, err = cluster.FromConfig(w.kube.Config, cluster.Options{}); err != nil {
		t.Fatal(err)
	}
	w.dyn = dynamic.NewForConfigOrDie(w.kube.Config)

	// ASO applies the example: here gitaso with the platform's Owner credential, into a scratch state
	// (team-a waits for the identity's export, as on a first run).
	db, err := state.Open(filepath.Join(t.TempDir(), "aso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = w.emu.Cred
	src := source.NewDir(".", "onboarding", source.WithRenderer(rendererWith(t, firstRun)))
	if _, err := reconcile.New(src, db, w.emu.Clients, cfg, nil).Once(t.Context(), reconcile.Options{Trigger: "cli", Refresh: true, All: true}); err != nil {
		t.Fatalf("apply the onboarding example as ASO would: %v", err)
	}
	if w.applied, err = db.Resources(record.Filter{}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, r := range w.applied {
		if r.Ready.Status != record.StatusTrue {
			t.Fatalf("%s not applied: %+v", r.Key(), r.Ready)
		}
		kinds[r.Group+"/"+r.Kind] = true
	}
	var gks []string
	for k := range kinds {
		gks = append(gks, k)
	}
	w.kube.InstallASOCRDs(t, append(gks, "resources.azure.com/ResourceGroup")...)
	for _, r := range w.applied {
		w.object(t, r.Namespace, r.Group, r.Version, r.Kind, r.Name, r.ARMID, nil)
	}
	return w
}

// object creates an ASO object as ASO leaves it: status.id and Ready True at generation 1.
func (w *asoWorld) object(t *testing.T, ns, group, version, kind, name, armID string, ann map[string]any) {
	t.Helper()
	meta := map[string]any{"namespace": ns, "name": name}
	if ann != nil {
		meta["annotations"] = ann
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: kubetest.Plural(kind)}
	ri := w.dyn.Resource(gvr).Namespace(ns)
	got, err := ri.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + version, "kind": kind, "metadata": meta, "spec": map[string]any{},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ASO object %s/%s/%s: %v", ns, kind, name, err)
	}
	got.Object["status"] = map[string]any{"id": armID, "conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": int64(1),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	if _, err := ri.UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of %s/%s/%s: %v", ns, kind, name, err)
	}
}

func (w *asoWorld) armID(t *testing.T, id string) string {
	t.Helper()
	for _, r := range w.applied {
		if r.Namespace+"/"+r.Kind+"/"+r.Name == id {
			return r.ARMID
		}
	}
	t.Fatalf("%s was not applied", id)
	return ""
}

func (w *asoWorld) reader() reconcile.ASOReader {
	return func(ctx context.Context) ([]cluster.ASOObject, error) {
		return w.cluster.ListASOObjects(ctx, cluster.ASOListOptions{})
	}
}

// copyOnboarding copies the onboarding example into a temporary directory (a pull request's tree).
func copyOnboarding(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir("onboarding", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(root, p)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanBesideASO plans a pull request of the onboarding example beside ASO: the example's resources in
// the emulator and their ASO objects in a real kube-apiserver, as ASO leaves them. gitaso signs in as a
// principal holding only Reader, with the read-only client, and the plan says what ASO would do once the
// pull request merges: update the resource group whose tags changed, create a new one, adopt one that
// exists in Azure with no object, only read the namespace whose object says skip, delete the federated
// credential the pull request removes, leave in Azure an object's resource under detach-on-delete, and
// nothing for the rest, each with its object's Ready and policy. The emulator's write log shows no write,
// and a run of the daemon records the plan and the run but no resource.
func TestPlanBesideASO(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator and kube-apiserver")
	}
	w := newASOWorld(t)
	ctx := t.Context()

	// Beside what ASO applied: a resource group created outside the repository (its object says
	// detach-on-delete) and one in Azure that no object manages yet.
	for _, rg := range []string{"ghost-rg", "adopted-rg"} {
		if _, err := w.emu.Client.Put(ctx, "/subscriptions/"+w.emu.Sub+"/resourceGroups/"+rg, "2020-06-01", []byte(`{"location":"uksouth"}`)); err != nil {
			t.Fatal(err)
		}
	}
	w.object(t, "platform", "resources.azure.com", "v1api20200601", "ResourceGroup", "ghost-rg",
		"/subscriptions/"+w.emu.Sub+"/resourceGroups/ghost-rg", map[string]any{aso.AnnotationReconcilePolicy: "detach-on-delete"})
	// Someone set skip on the Service Bus namespace's object (the manifest sets no policy).
	sb := schema.GroupVersionResource{Group: "servicebus.azure.com", Version: versionOf(t, w, "platform/Namespace/snd-infra-sb01"), Resource: "namespaces"}
	patch := []byte(`{"metadata":{"annotations":{"` + aso.AnnotationReconcilePolicy + `":"skip"}}}`)
	if _, err := w.dyn.Resource(sb).Namespace("platform").Patch(ctx, "snd-infra-sb01", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// The pull request: a tag changes, a resource group is added, another declared over what Azure
	// has, the federated credential is removed.
	tree := copyOnboarding(t)
	plat := filepath.Join(tree, "onboarding", "platform")
	editFile(t, filepath.Join(plat, "infra-resource-group.yaml"), "owner: platform-team", "owner: platform-team-2")
	for _, rg := range []string{"new-rg", "adopted-rg"} {
		if err := os.WriteFile(filepath.Join(plat, rg+".yaml"), []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: "+rg+"\n  namespace: platform\nspec:\n  location: uksouth\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(plat, "team-a-federated-credential.yaml")); err != nil {
		t.Fatal(err)
	}

	// gitaso beside ASO: Reader only, read-only client, no state.
	_, readerCred := w.emu.AddPrincipal(t, "reader", "Reader")
	opts := azure.DefaultOptions()
	readOnly, err := azure.ReadOnly(w.emu.Cloud, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.DefaultConfig()
	cfg.Global, cfg.BesideASO, cfg.ASO = readerCred, true, w.reader()
	src := source.NewDir(tree, "onboarding", source.WithRenderer(rendererWith(t, firstRun)))
	before := w.log.len()
	rep, err := reconcile.New(src, nil, readOnly, cfg, nil).PlanOnly(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Plan
	if p.Beside == nil || !p.Beside.Cluster || p.Beside.Objects != len(w.applied)+1 {
		t.Fatalf("beside %+v, want the cluster read with %d objects", p.Beside, len(w.applied)+1)
	}
	want := map[string]planner.Action{
		"platform/ResourceGroup/snd-infra-rg":                      planner.Update,
		"platform/ResourceGroup/new-rg":                            planner.Create,
		"platform/ResourceGroup/adopted-rg":                        planner.Adopt,
		"platform/Namespace/snd-infra-sb01":                        planner.Observe,
		"platform/FederatedIdentityCredential/team-a-identity-fic": planner.Delete,
		"platform/ResourceGroup/ghost-rg":                          planner.Detach,
		"platform/ResourceGroup/team-a-rg":                         planner.NoOp,
		"platform/UserAssignedIdentity/team-a-identity":            planner.NoOp,
	}
	got := map[string]*planner.Resource{}
	for _, r := range p.Resources {
		got[r.ID()] = r
	}
	for id, a := range want {
		r := got[id]
		if r == nil {
			t.Errorf("%s not in the plan", id)
			continue
		}
		if r.Action != a {
			t.Errorf("%s: ASO would %s (%s), want %s", id, r.Action, r.Reason, a)
		}
	}
	for _, r := range p.Resources {
		if _, listed := want[r.ID()]; !listed && r.Action != planner.NoOp {
			t.Errorf("%s: %s (%s), want no-op: ASO applied it as the repository says", r.ID(), r.Action, r.Reason)
		}
	}
	if r := got["platform/ResourceGroup/snd-infra-rg"]; r != nil {
		if r.ASO == nil || r.ASO.Ready.Status != "True" || r.ASO.Policy != aso.ReconcilePolicyManage {
			t.Errorf("snd-infra-rg's ASO view %+v", r.ASO)
		}
		if len(r.Changes) != 1 || r.Changes[0].Path != "/tags/owner" {
			t.Errorf("snd-infra-rg changes %+v, want /tags/owner", r.Changes)
		}
	}
	if r := got["platform/FederatedIdentityCredential/team-a-identity-fic"]; r != nil && (r.Request == nil || r.Request.Method != "DELETE") {
		t.Errorf("the removed credential: %+v, want ASO's DELETE", r.Request)
	}
	if r := got["platform/ResourceGroup/new-rg"]; r != nil && r.ASO != nil {
		t.Errorf("new-rg has an ASO object: %+v", r.ASO)
	}

	var text, md, js bytes.Buffer
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := planner.RenderMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if err := planner.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"Beside ASO: gitaso writes nothing",
		"# platform/ResourceGroup/snd-infra-rg would be updated in place by ASO (ASO would PUT the changes)",
		`aso        = "platform/ResourceGroup/snd-infra-rg, policy manage, Ready True (Succeeded)"`,
		"# platform/FederatedIdentityCredential/team-a-identity-fic would be deleted by ASO",
		"# platform/ResourceGroup/ghost-rg would be left in Azure by ASO (removed from the repository; reconcile-policy detach-on-delete",
		"# platform/Namespace/snd-infra-sb01 would be read only by ASO",
		"ASO would do: 1 to create, 1 to adopt, 1 to update, 0 drifted to correct, 1 to delete, 1 to detach",
	} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text plan lacks %q:\n%s", s, text.String())
		}
	}
	for _, s := range []string{"### gitaso plan beside ASO for", "| ASO object |", "platform/ResourceGroup/snd-infra-rg, policy manage, Ready True (Succeeded)"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown plan lacks %q:\n%s", s, md.String())
		}
	}
	// The pull request's comment (what serve --autoplan posts) is that plan.
	comment := strings.Join(forge.Comment(p, nil, forge.Limit("github"), forge.DefaultMarker), "")
	for _, s := range []string{"### gitaso plan beside ASO for", "| - delete | `platform/FederatedIdentityCredential/team-a-identity-fic` |"} {
		if !strings.Contains(comment, s) {
			t.Errorf("the pull request's comment lacks %q:\n%s", s, comment)
		}
	}
	var back struct {
		Beside    *planner.Beside `json:"besideASO"`
		Resources []struct {
			Name string             `json:"name"`
			ASO  *planner.ASOObject `json:"aso"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Beside == nil {
		t.Fatalf("JSON plan: %v %s", err, js.String())
	}

	// The daemon's run beside ASO records the plan and the run, and no resource.
	db, err := state.Open(filepath.Join(t.TempDir(), "beside.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := reconcile.New(src, db, readOnly, cfg, nil).Once(ctx, reconcile.Options{Trigger: "interval"}); err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(10)
	if err != nil || len(runs) != 1 || runs[0].Outcome != record.OutcomeSucceeded {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if planJSON, err := db.Plan(); err != nil || !bytes.Contains(planJSON, []byte(`"besideASO"`)) {
		t.Errorf("recorded plan: %v %.200s", err, planJSON)
	}
	if rs, err := db.Resources(record.Filter{}); err != nil || len(rs) != 0 {
		t.Errorf("beside ASO the state holds %d resources (%v), want none", len(rs), err)
	}

	if writes := w.log.since(before); len(writes) != 0 {
		for _, wr := range writes {
			t.Errorf("beside ASO gitaso wrote: %s %s (%d)", wr.Method, wr.Path, wr.Status)
		}
	}
	// The principal holds only Reader: a write of its own is refused by Azure.
	rc, err := w.emu.Clients.For(readerCred)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rc.Put(ctx, "/subscriptions/"+w.emu.Sub+"/resourceGroups/reader-rg", "2020-06-01", []byte(`{"location":"uksouth"}`))
	var ae *azure.ARMError
	if !errors.As(err, &ae) || ae.Code != "AuthorizationFailed" {
		t.Errorf("a PUT by the Reader principal: %v, want AuthorizationFailed", err)
	}
}

// versionOf is the CRD version the object of a resource was created with.
func versionOf(t *testing.T, w *asoWorld, id string) string {
	t.Helper()
	for _, r := range w.applied {
		if r.Namespace+"/"+r.Kind+"/"+r.Name == id {
			return r.Version
		}
	}
	t.Fatalf("%s was not applied", id)
	return ""
}

// TestRefuseWhatASOManages: gitaso managing the onboarding example with a cluster configured refuses the
// resources whose ARM ID an ASO object there manages, naming the object, in the plan and in the resource's
// Ready condition (the API's and the page's), and sends them nothing; an object under skip is no
// obstacle.
func TestRefuseWhatASOManages(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator and kube-apiserver")
	}
	w := newASOWorld(t)
	ctx := t.Context()
	// ASO lets go of every object but team-a-rg's (the hand-over's skip).
	objs, err := w.cluster.ListASOObjects(ctx, cluster.ASOListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Name == "team-a-rg" {
			continue
		}
		patch := []byte(`{"metadata":{"annotations":{"` + aso.AnnotationReconcilePolicy + `":"skip"}}}`)
		res := schema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: kubetest.Plural(o.Kind)}
		if _, err := w.dyn.Resource(res).Namespace(o.Namespace).Patch(ctx, o.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pull request gitaso now applies changes both resource groups.
	tree := copyOnboarding(t)
	plat := filepath.Join(tree, "onboarding", "platform")
	editFile(t, filepath.Join(plat, "infra-resource-group.yaml"), "owner: platform-team", "owner: gitaso")
	editFile(t, filepath.Join(plat, "team-a-resource-group.yaml"), "owner: team-a", "owner: gitaso")

	db, err := state.Open(filepath.Join(t.TempDir(), "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global, cfg.ASO = w.emu.Cred, w.reader()
	src := source.NewDir(tree, "onboarding", source.WithRenderer(rendererWith(t, firstRun)))
	r := reconcile.New(src, db, w.emu.Clients, cfg, nil)

	plan, err := r.PlanOnly(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := planner.RenderText(&text, plan.Plan, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"# refused: ASO object platform/ResourceGroup/team-a-rg in the cluster manages " + w.armID(t, "platform/ResourceGroup/team-a-rg"),
		"Refused: 1 resources are managed by ASO objects in the cluster",
	} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("plan lacks %q:\n%s", s, text.String())
		}
	}

	before := w.log.len()
	if _, err := r.Once(ctx, reconcile.Options{Trigger: "cli", Refresh: true, All: true}); err != nil {
		t.Fatal(err)
	}
	rgID := strings.ToLower(w.armID(t, "platform/ResourceGroup/team-a-rg"))
	infraWritten := false
	for _, wr := range w.log.since(before) {
		p := strings.ToLower(wr.Path)
		if p == rgID {
			t.Errorf("gitaso wrote %s %s, which ASO manages", wr.Method, wr.Path)
		}
		if strings.HasSuffix(p, "/resourcegroups/snd-infra-rg") && wr.Method == "PUT" {
			infraWritten = true
		}
	}
	if !infraWritten {
		t.Error("snd-infra-rg (its ASO object says skip) was not applied")
	}
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, res := range rs {
		if res.Name != "team-a-rg" {
			continue
		}
		found = true
		if res.Ready.Status != record.StatusFalse || res.Ready.Reason != executor.ReasonManagedByASO ||
			!strings.Contains(res.Ready.Message, "ASO object platform/ResourceGroup/team-a-rg") {
			t.Errorf("team-a-rg Ready %+v, want False ManagedByASO naming the object", res.Ready)
		}
	}
	if !found {
		t.Error("team-a-rg has no state record")
	}
	// The API (and the page, which reads it) shows the refusal.
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/resources/platform/ResourceGroup/team-a-rg")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"reason":"ManagedByASO"`)) ||
		!bytes.Contains(body, []byte("ASO object platform/ResourceGroup/team-a-rg in the cluster manages")) {
		t.Errorf("GET /api/v1/resources/platform/ResourceGroup/team-a-rg: %d %s", resp.StatusCode, body)
	}
}

// TestPlanBesideASOCommandLine is TestPlanBesideASO's first step through the command line, as a platform
// team runs it: `gitaso plan --beside-aso` over the onboarding example with its substitution flags, the
// cluster's kubeconfig and a Reader's credentials in the environment. It exits 2 (ASO has changes to make),
// lists the tag change as ASO's update and the rest as up to date, and writes nothing to Azure.
func TestPlanBesideASOCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator and kube-apiserver")
	}
	w := newASOWorld(t)
	tree := copyOnboarding(t)
	editFile(t, filepath.Join(tree, "onboarding", "platform", "infra-resource-group.yaml"), "owner: platform-team", "owner: platform-team-2")
	sp, _ := w.emu.AddPrincipal(t, "reader", "Reader")
	t.Setenv("GITASO_CLOUD_CONFIG", w.emu.CloudFile)
	t.Setenv("AZURE_TENANT_ID", w.emu.Emu.TenantID())
	t.Setenv("AZURE_CLIENT_ID", sp.ClientID)
	t.Setenv("AZURE_CLIENT_SECRET", sp.Secret)
	t.Setenv("AZURE_SUBSCRIPTION_ID", w.emu.Sub)
	before := w.log.len()
	var out, errOut bytes.Buffer
	err := cli.Run(t.Context(), []string{"plan", "--beside-aso", "--dir", tree, "--path", "onboarding",
		"--substitute-from", "platform/platform-vars", "--substitute-from", "ConfigMap/platform/team-a-vars", "--substitute-strict",
		"--kubeconfig", w.kube.Kubeconfig, "--state", filepath.Join(t.TempDir(), "s.db"), "--output", "json"}, &out, &errOut)
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != 2 {
		t.Fatalf("plan --beside-aso: %v, want exit code 2\n%s", err, errOut.String())
	}
	p, err := planner.ReadJSON(&out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Beside == nil || !p.Beside.Cluster || p.Beside.Objects != len(w.applied) {
		t.Errorf("besideASO %+v, want the cluster's %d objects read", p.Beside, len(w.applied))
	}
	for _, r := range p.Resources {
		want := planner.NoOp
		if r.ID() == "platform/ResourceGroup/snd-infra-rg" {
			want = planner.Update
		}
		if r.Action != want || r.ASO == nil || r.ASO.Ready.Status != "True" {
			t.Errorf("%s: %s (%s), ASO view %+v; want %s with its object", r.ID(), r.Action, r.Reason, r.ASO, want)
		}
	}
	if len(p.Resources) != len(w.applied) {
		t.Errorf("%d resources planned, want %d", len(p.Resources), len(w.applied))
	}
	for _, wr := range w.log.since(before) {
		t.Errorf("plan --beside-aso wrote: %s %s (%d)", wr.Method, wr.Path, wr.Status)
	}
}
