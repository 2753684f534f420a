package anchor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// The hand-over run (-handover, docs/aso-anchor.md "Hand-over"): ONE emulator and ONE kube-apiserver, ASO's real
// controller and gitaso's CLI taking turns on the same resources, the emulator's write log (with each write's
// principal) as the proof that no resource is written by both and none is left without a manager.
//
// Phases, each ending when ARM has been quiet for handoverQuiet:
//
//	aso        ASO's controller applies the workload until every object is Ready       (ASO may write)
//	import     gitaso import of every namespace, gitaso plan, and gitaso apply of a   (nobody writes)
//	           change while ASO manages the resource (refused), reverted
//	handover   gitaso handover of each namespace                                       (nobody writes)
//	gitaso     a change committed to gitaso's repository, gitaso apply; the same change (nobody but gitaso)
//	           applied to ASO's object, which says skip
//	export     gitaso export of each namespace: ASO's objects given back, gitaso detaches (ASO may write)
//	aso-again  a change to an ASO object, written by ASO's controller                  (ASO may write)

// handoverQuiet is how long ARM must be quiet for a phase to end (ASO reacts to an object's change within it).
const handoverQuiet = 5 * time.Second

// The workload's changes: gitaso's (the queue's maxDeliveryCount, in gitaso's repository and mirrored on ASO's
// object while it says skip) and ASO's after the way back (a tag on the storage account).
const (
	gitasoChangeKind, gitasoChangeNS, gitasoChangeName = "NamespacesQueue", "team-a", "team-a-orders"
	gitasoChangeValue                                  = int64(7)
	asoChangeKind, asoChangeNS, asoChangeName          = "StorageAccount", "team-a", "teamastorage01"
)

// HandoverStep is one command or action of a phase.
type HandoverStep struct {
	Name    string              `json:"name"`
	Seconds float64             `json:"seconds"`
	Start   time.Time           `json:"start"`
	Traffic map[string]*Traffic `json:"traffic"` // the ARM requests sent while it ran, by side
	Error   string              `json:"error,omitempty"`
	Output  string              `json:"output,omitempty"` // the command's stdout, cut short
}

// HandoverPhase is one phase's figures.
type HandoverPhase struct {
	PhaseWindow
	Seconds float64             `json:"seconds"` // to its last step (without the quiet wait)
	Steps   []HandoverStep      `json:"steps"`
	Traffic map[string]*Traffic `json:"traffic"` // by side: aso, gitaso, other
}

// HandoverResult is a hand-over run.
type HandoverResult struct {
	Workload   string           `json:"workload"`
	Stale      bool             `json:"staleASOObject,omitempty"` // -handover-stale
	Date       string           `json:"date"`
	Objects    int              `json:"objects"`
	ASOObjects int              `json:"asoResources"`
	Namespaces []string         `json:"namespaces"`
	Phases     []*HandoverPhase `json:"phases"`
	Writes     WriteCheck       `json:"writes"`
	Managers   []ManagerCheck   `json:"managers"`
	// Checks are the other assertions of the run, each "ok: ..." or "FAILED: ...".
	Checks []string `json:"checks"`
	// WayBack compares every stored body before and after the export (volatile values aside): the way back
	// changes nothing in Azure.
	WayBackBodies, WayBackEqual int    `json:"-"`
	WayBackDiffs                []Diff `json:"wayBackDiffs,omitempty"`
	Error                       string `json:"error,omitempty"`
}

// OK reports every check held.
func (r *HandoverResult) OK() bool {
	if r.Error != "" || !r.Writes.OK() {
		return false
	}
	for _, m := range r.Managers {
		if !m.OK() {
			return false
		}
	}
	for _, c := range r.Checks {
		if strings.HasPrefix(c, "FAILED") {
			return false
		}
	}
	return true
}

// handover is a hand-over run in progress.
type handover struct {
	o          Options
	res        *HandoverResult
	dir        string // the run's directory
	emu        *emulator.Emulator
	wl         *writeLog
	cl         *cluster
	kobjs      []kubeObject
	env        []string // gitaso's environment
	cloud      string
	repo       string // gitaso's repository (import's output, a Git work tree)
	stateFile  string
	asoID      string // principals' object IDs
	gitasoID   string
	phases     []PhaseWindow
	cur        *HandoverPhase
	beforeBack []emulator.StoredResource
}

func (h *handover) sideOf(principal string) string {
	switch principal {
	case h.asoID:
		return sideASO
	case h.gitasoID:
		return sideGitaso
	}
	return sideOther
}

func (h *handover) check(ok bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ok {
		h.res.Checks = append(h.res.Checks, "ok: "+msg)
		return
	}
	h.res.Checks = append(h.res.Checks, "FAILED: "+msg)
	h.o.Logger.Error("hand-over check failed", "check", msg)
}

// RunHandover runs the workload's hand-over from ASO to gitaso and back (see the phases above).
func RunHandover(ctx context.Context, o Options) (*HandoverResult, error) {
	if o.Logger == nil {
		return nil, errors.New("anchor: hand-over: no logger")
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 16
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	gitasoBin, err := filepath.Abs(o.Gitaso)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	o.Gitaso = gitasoBin
	name := o.Workload.Name + "-handover"
	if o.HandoverStale {
		name += "-stale"
	}
	dir, err := filepath.Abs(filepath.Join(o.Out, name))
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	_ = os.RemoveAll(dir)
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	if err := o.Workload.Write(manifests); err != nil {
		return nil, fmt.Errorf("anchor: workload %s: %w", o.Workload.Name, err)
	}
	snap, err := source.NewDir(manifests, "").Fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("anchor: workload %s: %w", o.Workload.Name, err)
	}
	h := &handover{o: o, dir: dir, wl: &writeLog{}, repo: filepath.Join(dir, "repo"), stateFile: filepath.Join(dir, "gitaso.db"),
		res: &HandoverResult{Workload: o.Workload.Name, Stale: o.HandoverStale, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Objects: len(snap.Objects)}}
	err = h.run(ctx, snap.Objects)
	if err != nil {
		h.res.Error = err.Error()
	}
	h.res.Writes = checkWrites(h.wl.records(), h.phases, h.sideOf)
	h.writeChecks()
	if werr := writeJSON(filepath.Join(dir, "handover.json"), h.res); werr != nil {
		err = errors.Join(err, werr)
	}
	if werr := writeJSON(filepath.Join(dir, "writes.json"), h.wl.records()); werr != nil {
		err = errors.Join(err, werr)
	}
	return h.res, err
}

func (h *handover) run(ctx context.Context, objs []manifest.Object) (err error) {
	o := h.o
	h.emu, err = emulator.New(emulator.WithDefaultLatency(o.Latency), emulator.WithWriteLog(h.wl.add), emulator.WithRequestLogSize(1<<20))
	if err != nil {
		return fmt.Errorf("anchor: emulator: %w", err)
	}
	defer func() { err = errors.Join(err, h.emu.Close()) }()
	mi := h.emu.HostManagedIdentity()
	if err := h.emu.AssignRole(mi.PrincipalID, "Owner", "/subscriptions/"+h.emu.SubscriptionID()); err != nil {
		return fmt.Errorf("anchor: grant the managed identity Owner: %w", err)
	}
	sp, err := h.emu.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "gitaso-handover"},
		Roles: []emulator.RoleGrant{{Role: "Owner", Scope: "/subscriptions/" + h.emu.SubscriptionID()}}})
	if err != nil {
		return fmt.Errorf("anchor: gitaso's principal: %w", err)
	}
	h.asoID, h.gitasoID = mi.PrincipalID, sp.ObjectID
	h.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"AZURE_TENANT_ID=" + h.emu.TenantID(), "AZURE_SUBSCRIPTION_ID=" + h.emu.SubscriptionID(),
		"AZURE_CLIENT_ID=" + sp.ClientID, "AZURE_CLIENT_SECRET=" + sp.Secret, "NO_PROXY=*", "HTTPS_PROXY=", "HTTP_PROXY="}
	caFile, cloudFile, err := writeCA(h.dir, h.emu)
	if err != nil {
		return err
	}
	h.cloud = cloudFile
	o.Logger.Info("hand-over: starting kube-apiserver and etcd, installing CRDs", "crds", o.CRDs)
	if h.cl, err = startCluster(ctx, o.KubeAssets, o.CRDs, h.dir); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.cl.stop()) }()
	if h.kobjs, err = h.cl.mapObjects(objs); err != nil {
		return err
	}
	if err := h.cl.ensureNamespaces(ctx, h.kobjs); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, k := range h.kobjs {
		if k.aso {
			h.res.ASOObjects++
			if ns := k.obj.GetNamespace(); !seen[ns] {
				seen[ns] = true
				h.res.Namespaces = append(h.res.Namespaces, ns)
			}
		}
	}
	p, err := startASO(ctx, o.Logger, o.Controller, h.cl, asoEnv(h.emu, caFile, h.cl.kubeconfig, 0), filepath.Join(h.dir, "controller.log"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.stop()) }()
	for _, ph := range []struct {
		name, writer string
		fn           func(context.Context) error
	}{
		{"aso", sideASO, h.asoApplies},
		{"import", sideNone, h.imports},
		{"handover", sideNone, h.handsOver},
		{"gitaso", sideGitaso, h.gitasoChanges},
		{"export", sideASO, h.exports},
		{"aso-again", sideASO, h.asoChanges},
	} {
		if err := h.phase(ctx, ph.name, ph.writer, ph.fn); err != nil {
			return fmt.Errorf("anchor: hand-over phase %s: %w", ph.name, err)
		}
	}
	return nil
}

// phase runs fn as the named phase: the request log is reset at its start, ARM must be quiet for
// handoverQuiet before it ends, and its traffic is counted by side.
func (h *handover) phase(ctx context.Context, name, writer string, fn func(context.Context) error) error {
	h.o.Logger.Info("hand-over phase", "phase", name)
	h.emu.ResetStats()
	h.cur = &HandoverPhase{PhaseWindow: PhaseWindow{Name: name, Writer: writer, Start: time.Now()}}
	h.res.Phases = append(h.res.Phases, h.cur)
	err := fn(ctx)
	h.cur.Seconds = time.Since(h.cur.Start).Seconds()
	if werr := waitIdle(ctx, h.emu, handoverQuiet); werr != nil && err == nil {
		err = werr
	}
	h.cur.End = time.Now()
	log := h.emu.RequestLog()
	h.cur.Traffic = countTraffic(log, h.sideOf)
	for i := range h.cur.Steps {
		st := &h.cur.Steps[i]
		end := st.Start.Add(time.Duration(st.Seconds * float64(time.Second)))
		var in []emulator.LogEntry
		for _, e := range log {
			if !e.Time.Before(st.Start) && e.Time.Before(end) {
				in = append(in, e)
			}
		}
		st.Traffic = countTraffic(in, h.sideOf)
	}
	h.phases = append(h.phases, h.cur.PhaseWindow)
	h.o.Logger.Info("hand-over phase done", "phase", name, "seconds", fmt.Sprintf("%.1f", h.cur.Seconds), "err", err)
	if err != nil {
		return err
	}
	return h.managers(ctx, name)
}

// managers checks who manages each ASO object's resource at the end of a phase.
func (h *handover) managers(ctx context.Context, phase string) error {
	views, err := h.views(ctx)
	if err != nil {
		return err
	}
	held, err := h.stateIDs()
	if err != nil {
		return err
	}
	expected := sideASO
	switch phase {
	case "handover", "gitaso":
		expected = sideGitaso
	}
	h.res.Managers = append(h.res.Managers, classifyManagers(phase, expected, views, held, phase == "import"))
	return nil
}

// managersNow checks, in the middle of a phase, that each resource has a manager (expected "" accepts
// either).
func (h *handover) managersNow(ctx context.Context, label, expected string) error {
	views, err := h.views(ctx)
	if err != nil {
		return err
	}
	held, err := h.stateIDs()
	if err != nil {
		return err
	}
	// Midway, gitaso's state holds every resource (the adoption ran first) while ASO still manages those not
	// yet set to skip: held by both, by design (gitaso refuses to write what an ASO object manages).
	h.res.Managers = append(h.res.Managers, classifyManagers(label, expected, views, held, true))
	return nil
}

// views reads every ASO object of the workload from the cluster.
func (h *handover) views(ctx context.Context) ([]ObjectView, error) {
	var out []ObjectView
	for _, k := range h.kobjs {
		if !k.aso {
			continue
		}
		ref := fmt.Sprintf("%s %s/%s", k.obj.GetKind(), k.obj.GetNamespace(), k.obj.GetName())
		u, err := h.cl.dyn.Resource(k.gvr).Namespace(k.obj.GetNamespace()).Get(ctx, k.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			out = append(out, ObjectView{Ref: ref, Gone: true})
			continue
		}
		id := u.GetAnnotations()[aso.AnnotationResourceID]
		if id == "" {
			id, _, _ = unstructured.NestedString(u.Object, "status", "id")
		}
		out = append(out, ObjectView{Ref: ref, ARMID: id, Policy: u.GetAnnotations()[aso.AnnotationReconcilePolicy]})
	}
	return out, nil
}

// stateIDs returns the lower-cased ARM IDs gitaso's state holds (none before the import).
func (h *handover) stateIDs() (map[string]bool, error) {
	out := map[string]bool{}
	if _, err := os.Stat(h.stateFile); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	db, err := state.Open(h.stateFile)
	if err != nil {
		return nil, fmt.Errorf("anchor: gitaso's state: %w", err)
	}
	defer db.Close()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		return nil, fmt.Errorf("anchor: gitaso's state: %w", err)
	}
	for _, r := range rs {
		if r.ARMID != "" {
			out[strings.ToLower(r.ARMID)] = true
		}
	}
	return out, nil
}

// step runs fn as a step of the current phase.
func (h *handover) step(name string, fn func() (string, error)) error {
	start := time.Now()
	out, err := fn()
	s := HandoverStep{Name: name, Start: start, Seconds: time.Since(start).Seconds(), Output: cut(out, 2000)}
	if err != nil {
		s.Error = err.Error()
	}
	h.cur.Steps = append(h.cur.Steps, s)
	h.o.Logger.Info("hand-over step", "step", name, "seconds", fmt.Sprintf("%.2f", s.Seconds), "err", err)
	return err
}

// gitaso runs bin/gitaso with args as a step; its output goes to the run's log too.
func (h *handover) gitaso(ctx context.Context, name string, args ...string) (string, error) {
	var out string
	err := h.step(name, func() (string, error) {
		cmd := exec.CommandContext(ctx, h.o.Gitaso, args...)
		cmd.Env, cmd.Dir = h.env, h.dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out = stdout.String()
		logf, lerr := os.OpenFile(filepath.Join(h.dir, "gitaso-cli.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if lerr == nil {
			fmt.Fprintf(logf, "$ gitaso %s\n%s%s(exit: %v)\n\n", strings.Join(args, " "), stdout.String(), stderr.String(), err)
			logf.Close()
		}
		if err != nil {
			return out, fmt.Errorf("gitaso %s: %w: %s", args[0], err, cut(strings.TrimSpace(stderr.String()+"\n"+stdout.String()), 1500))
		}
		return out, nil
	})
	return out, err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

func list(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return ": " + strings.Join(s, "; ")
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// asoApplies is the first phase: ASO's controller creates everything.
func (h *handover) asoApplies(ctx context.Context) error {
	if err := h.step("server-side apply of every object", func() (string, error) {
		return "", h.cl.applyAll(ctx, h.kobjs, h.o.Parallelism)
	}); err != nil {
		return err
	}
	return h.step("ASO: every object Ready", func() (string, error) {
		wctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		defer cancel()
		if err := h.cl.waitReady(wctx, h.kobjs, progress(h.o.Logger, "aso")); err != nil {
			return strings.Join(h.cl.notReady(ctx, h.kobjs), "\n"), err
		}
		return "", nil
	})
}

func (h *handover) nsArgs() []string {
	var args []string
	for _, ns := range h.res.Namespaces {
		args = append(args, "--namespace", ns)
	}
	return args
}

// imports runs gitaso import of every namespace, commits its output as gitaso's repository and plans it.
func (h *handover) imports(ctx context.Context) error {
	args := append([]string{"import", "--kubeconfig", h.cl.kubeconfig}, h.nsArgs()...)
	args = append(args, "--out", h.repo, "--state", h.stateFile, "--cloud-config", h.cloud)
	if _, err := h.gitaso(ctx, "gitaso import", args...); err != nil {
		return err
	}
	if err := h.git(ctx, "init", "-q"); err != nil {
		return err
	}
	if err := h.commit(ctx, "gitaso import"); err != nil {
		return err
	}
	out, err := h.gitaso(ctx, "gitaso plan", "plan", "--dir", h.repo, "--state", h.stateFile, "--cloud-config", h.cloud, "--kubeconfig", h.cl.kubeconfig)
	h.check(err == nil && planSaysNoChanges(out), "the plan right after the import says no changes%s", errText(err))
	return h.refusedWhileASOManages(ctx)
}

// refusedWhileASOManages commits a change to gitaso's repository while ASO still manages the resource (its
// state holds it since the import) and runs gitaso apply: gitaso must refuse to write it, naming ASO's object
// (the phase's write check proves no write). The change is then reverted, so the repository says what ASO's
// objects say again for the hand-over.
func (h *handover) refusedWhileASOManages(ctx context.Context) error {
	file, err := h.findManifest(gitasoChangeKind, gitasoChangeNS, gitasoChangeName)
	if err != nil {
		return err
	}
	if err := editManifest(file, func(u map[string]any) error {
		return unstructured.SetNestedField(u, gitasoChangeValue+1, "spec", "maxDeliveryCount")
	}); err != nil {
		return err
	}
	if err := h.commit(ctx, "team-a-orders: maxDeliveryCount 8 (while ASO manages it)"); err != nil {
		return err
	}
	// On gitaso's own state: a resource refused because ASO manages it is no failed apply to retry, so the
	// hand-over's adoption afterwards still writes nothing (before that fix, 2026-11-28 10:58, it would).
	out, err := h.gitaso(ctx, "gitaso apply of a change while ASO manages the resource", "apply", "--dir", h.repo, "--state", h.stateFile,
		"--cloud-config", h.cloud, "--kubeconfig", h.cl.kubeconfig)
	text := out
	if err != nil {
		text += err.Error()
		h.cur.Steps[len(h.cur.Steps)-1].Error = "" // expected: the apply reports the resource it refused
	}
	exit := "exit 0"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = fmt.Sprintf("exit %d", ee.ExitCode())
	}
	h.check(strings.Contains(text, "ManagedByASO") || strings.Contains(text, "gitaso does not write it while ASO does"),
		"gitaso apply of a change to %s while ASO manages it: refused (ManagedByASO), naming ASO's object (%s)", gitasoChangeName, exit)
	return h.git(ctx, "revert", "--no-edit", "HEAD")
}

// handsOver runs gitaso handover of each namespace. A namespace whose objects' reconcile policy the original
// applier sets (the onboarding blob service's detach-on-delete) is refused, naming the object; the harness then
// applies ASO's repository without the annotation, as its owner would, and runs handover again.
func (h *handover) handsOver(ctx context.Context) error {
	for _, ns := range h.res.Namespaces {
		args := []string{"handover", "--namespace", ns, "--dir", h.repo, "--state", h.stateFile, "--cloud-config", h.cloud, "--kubeconfig", h.cl.kubeconfig}
		_, err := h.gitaso(ctx, "gitaso handover "+ns, args...)
		if err == nil {
			continue
		}
		owned := h.policiesSetByApplier(ns)
		if len(owned) == 0 {
			return err
		}
		h.check(strings.Contains(err.Error(), owned[0].obj.GetName()), "handover of %s refused while ASO's repository sets %s's reconcile policy, naming it", ns, owned[0].obj.GetName())
		// The interrupted hand-over leaves each resource with one manager: the objects set are gitaso's, the
		// others ASO's.
		if err := h.managersNow(ctx, "handover of "+ns+" refused", ""); err != nil {
			return err
		}
		if err := h.step("ASO's repository applied without the reconcile-policy annotations of "+ns, func() (string, error) {
			for _, k := range owned {
				u := k.obj.DeepCopy()
				ann := u.GetAnnotations()
				delete(ann, aso.AnnotationReconcilePolicy)
				u.SetAnnotations(ann)
				if err := h.cl.applyAll(ctx, []kubeObject{{obj: u, gvr: k.gvr, aso: true}}, 1); err != nil {
					return "", err
				}
				k.obj.SetAnnotations(ann)
			}
			return "", nil
		}); err != nil {
			return err
		}
		if _, err := h.gitaso(ctx, "gitaso handover "+ns+" (again)", args...); err != nil {
			return err
		}
	}
	views, err := h.views(ctx)
	if err != nil {
		return err
	}
	skip := 0
	for _, v := range views {
		if v.Policy == string(aso.ReconcilePolicySkip) {
			skip++
		}
	}
	h.check(skip == len(views), "%d of %d ASO objects say reconcile-policy skip after the hand-over", skip, len(views))
	return nil
}

// policiesSetByApplier returns the workload's objects of ns whose manifest sets a reconcile policy.
func (h *handover) policiesSetByApplier(ns string) []*kubeObject {
	var out []*kubeObject
	for i := range h.kobjs {
		k := &h.kobjs[i]
		if k.aso && k.obj.GetNamespace() == ns && k.obj.GetAnnotations()[aso.AnnotationReconcilePolicy] != "" {
			out = append(out, k)
		}
	}
	return out
}

// gitasoChanges commits a change to gitaso's repository and applies it with gitaso; then the same change is
// applied to ASO's object (as ASO's repository would be updated for a later way back), which says skip: ASO must
// write nothing.
func (h *handover) gitasoChanges(ctx context.Context) error {
	file, err := h.findManifest(gitasoChangeKind, gitasoChangeNS, gitasoChangeName)
	if err != nil {
		return err
	}
	if err := editManifest(file, func(u map[string]any) error {
		return unstructured.SetNestedField(u, gitasoChangeValue, "spec", "maxDeliveryCount")
	}); err != nil {
		return err
	}
	if err := h.commit(ctx, "team-a-orders: maxDeliveryCount 7"); err != nil {
		return err
	}
	if _, err := h.gitaso(ctx, "gitaso apply", "apply", "--dir", h.repo, "--state", h.stateFile, "--cloud-config", h.cloud, "--kubeconfig", h.cl.kubeconfig); err != nil {
		return err
	}
	if h.o.HandoverStale {
		return nil
	}
	k, err := h.kobj(gitasoChangeKind, gitasoChangeNS, gitasoChangeName)
	if err != nil {
		return err
	}
	if err := h.step("the same change applied to ASO's object (it says skip)", func() (string, error) {
		if err := unstructured.SetNestedField(k.obj.Object, gitasoChangeValue, "spec", "maxDeliveryCount"); err != nil {
			return "", err
		}
		return "", h.cl.applyAll(ctx, []kubeObject{*k}, 1)
	}); err != nil {
		return err
	}
	// Let ASO see the object's change before the phase's quiet wait starts.
	time.Sleep(2 * time.Second)
	return nil
}

// exports gives every namespace back to ASO with gitaso export.
func (h *handover) exports(ctx context.Context) error {
	h.beforeBack = h.emu.Resources()
	for _, ns := range h.res.Namespaces {
		if _, err := h.gitaso(ctx, "gitaso export "+ns, "export", "--namespace", ns, "--dir", h.repo, "--state", h.stateFile,
			"--kubeconfig", h.cl.kubeconfig, "--out", filepath.Join(h.dir, "back", ns)); err != nil {
			return err
		}
	}
	views, err := h.views(ctx)
	if err != nil {
		return err
	}
	// The policy each object should end with is its manifest's in gitaso's repository (the import kept the
	// one ASO's repository set: the blob service's detach-on-delete).
	snap, err := source.NewDir(h.repo, "").Fetch(ctx)
	if err != nil {
		return fmt.Errorf("anchor: gitaso's repository: %w", err)
	}
	want := map[string]string{}
	for _, o := range snap.Objects {
		if isASO(o) {
			want[fmt.Sprintf("%s %s/%s", o.Kind(), o.Namespace(), o.Name())] = o.Annotations()[aso.AnnotationReconcilePolicy]
		}
	}
	var wrong []string
	for _, v := range views {
		if v.Policy != want[v.Ref] {
			wrong = append(wrong, fmt.Sprintf("%s %q (want %q)", v.Ref, v.Policy, want[v.Ref]))
		}
	}
	h.check(len(wrong) == 0 && len(views) == len(want), "after the export each of the %d ASO objects has the policy its manifest in gitaso's repository says (%d wrong%s)",
		len(views), len(wrong), list(wrong))
	// ASO reacts to the policy given back: wait until its objects are Ready at their generation again (the
	// queue's changed while it said skip).
	return h.step("ASO: every object Ready after the way back", func() (string, error) {
		wctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		defer cancel()
		if err := h.cl.waitReady(wctx, h.kobjs, progress(h.o.Logger, "aso")); err != nil {
			h.check(false, "ASO made every object Ready after the way back: %v", err)
			return strings.Join(h.cl.notReady(ctx, h.kobjs), "\n"), nil
		}
		h.check(true, "ASO made every object Ready after the way back")
		return "", nil
	})
}

// asoChanges changes an ASO object after the way back: ASO's controller writes it, gitaso nothing.
func (h *handover) asoChanges(ctx context.Context) error {
	after := h.emu.Resources()
	orc := compare(nil, nil, h.beforeBack, after)
	h.res.WayBackBodies, h.res.WayBackEqual, h.res.WayBackDiffs = orc.FinalResources, orc.FinalMatched, orc.Diffs
	h.check(orc.FinalMatched == orc.FinalResources, "the way back changed nothing in Azure: %d of %d stored bodies equal before the export and after ASO's reconciles", orc.FinalMatched, orc.FinalResources)
	k, err := h.kobj(asoChangeKind, asoChangeNS, asoChangeName)
	if err != nil {
		return err
	}
	if err := h.step("a tag added to ASO's "+asoChangeName, func() (string, error) {
		tags, _, _ := unstructured.NestedStringMap(k.obj.Object, "spec", "tags")
		if tags == nil {
			tags = map[string]string{}
		}
		tags["handed-back"] = "yes"
		if err := unstructured.SetNestedStringMap(k.obj.Object, tags, "spec", "tags"); err != nil {
			return "", err
		}
		return "", h.cl.applyAll(ctx, []kubeObject{*k}, 1)
	}); err != nil {
		return err
	}
	return h.step("ASO: "+asoChangeName+" Ready at its new generation", func() (string, error) {
		wctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		defer cancel()
		return "", h.cl.waitReady(wctx, []kubeObject{*k}, nil)
	})
}

// kobj returns the workload's object.
func (h *handover) kobj(kind, ns, name string) (*kubeObject, error) {
	for i := range h.kobjs {
		k := &h.kobjs[i]
		if k.obj.GetKind() == kind && k.obj.GetNamespace() == ns && k.obj.GetName() == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("anchor: workload %s has no %s %s/%s", h.o.Workload.Name, kind, ns, name)
}

// findManifest returns the file of gitaso's repository that holds the object.
func (h *handover) findManifest(kind, ns, name string) (string, error) {
	var found string
	err := filepath.WalkDir(h.repo, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" || !strings.HasSuffix(p, ".yaml") {
			if d != nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		objs, err := source.ParseFile(p, b)
		if err != nil {
			return nil // kustomization.yaml and the like
		}
		for _, o := range objs {
			if o.Kind() == kind && o.Name() == name && (o.Namespace() == ns || o.Namespace() == "") {
				found = p
			}
		}
		return nil
	})
	if err == nil && found == "" {
		err = fmt.Errorf("anchor: gitaso's repository %s has no manifest of %s %s/%s", h.repo, kind, ns, name)
	}
	return found, err
}

// editManifest rewrites a one-object manifest file through edit.
func editManifest(file string, edit func(map[string]any) error) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	var u map[string]any
	if err := yaml.Unmarshal(b, &u); err != nil {
		return fmt.Errorf("anchor: %s: %w", file, err)
	}
	if err := edit(u); err != nil {
		return fmt.Errorf("anchor: %s: %w", file, err)
	}
	out, err := yaml.Marshal(u)
	if err != nil {
		return fmt.Errorf("anchor: %s: %w", file, err)
	}
	return os.WriteFile(file, out, 0o644)
}

func (h *handover) git(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", h.repo, "-c", "user.name=aso-anchor", "-c", "user.email=aso-anchor@localhost"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("anchor: git %s: %w: %s", args[0], err, out)
	}
	return nil
}

func (h *handover) commit(ctx context.Context, msg string) error {
	if err := h.git(ctx, "add", "-A"); err != nil {
		return err
	}
	return h.git(ctx, "commit", "-q", "-m", msg)
}

// writeChecks are the write log's checks of each phase's own change.
func (h *handover) writeChecks() {
	recs := h.wl.records()
	for _, ph := range h.phases {
		switch ph.Name {
		case "import", "handover":
			n := writesIn(recs, ph, func(string) bool { return true }, h.sideOf)
			h.check(len(n) == 0, "%s: no write to Azure by anyone (ASO %d, gitaso %d, other %d)", ph.Name, n[sideASO], n[sideGitaso], n[sideOther])
		case "gitaso":
			n := writesIn(recs, ph, hasSuffix("/queues/"+gitasoChangeName), h.sideOf)
			holds := "holds the same change"
			if h.o.HandoverStale {
				holds = "still holds the old value"
			}
			h.check(n[sideGitaso] > 0 && n[sideASO] == 0, "gitaso: the queue's change written by gitaso (%d writes) and not by ASO (%d), whose object says skip and %s",
				n[sideGitaso], n[sideASO], holds)
		case "aso-again":
			n := writesIn(recs, ph, hasSuffix("/storageaccounts/"+asoChangeName), h.sideOf)
			h.check(n[sideASO] > 0 && n[sideGitaso] == 0, "aso-again: the storage account's change written by ASO (%d writes) and not by gitaso (%d)", n[sideASO], n[sideGitaso])
		}
	}
}

func hasSuffix(suffix string) func(string) bool {
	return func(p string) bool { return strings.HasSuffix(strings.ToLower(p), suffix) }
}

var planCountRE = regexp.MustCompile(`(\d+) (to create|to adopt|to update|drifted to correct|to delete|to detach)`)

// planSaysNoChanges reports a plan that says "no changes", or whose summary counts nothing to create, adopt,
// update, correct, delete or detach.
func planSaysNoChanges(out string) bool {
	if strings.Contains(strings.ToLower(out), "no changes") {
		return true
	}
	ms := planCountRE.FindAllStringSubmatch(out, -1)
	for _, m := range ms {
		if m[1] != "0" {
			return false
		}
	}
	return len(ms) > 0
}
