package anchor

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/manifest"
)

// asoNamespace is the controller's own namespace (POD_NAMESPACE).
const asoNamespace = "azureserviceoperator-system"

// asoProcess is ASO's controller running against a cluster and an emulator.
type asoProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// asoEnv is the controller's environment: the emulator's ARM and Entra endpoints, its managed identity (App
// Service protocol) as the global credential, the webhooks-and-watchers mode and nothing else.
func asoEnv(emu *emulator.Emulator, caFile, kubeconfig string, syncPeriod time.Duration) []string {
	idEndpoint, idHeader := emu.ManagedIdentityEndpoint()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"KUBECONFIG=" + kubeconfig,
		"POD_NAMESPACE=" + asoNamespace,
		"AZURE_OPERATOR_MODE=watchers-and-webhooks",
		"AZURE_SUBSCRIPTION_ID=" + emu.SubscriptionID(),
		"AZURE_TENANT_ID=" + emu.TenantID(),
		"AZURE_RESOURCE_MANAGER_ENDPOINT=" + emu.ARMEndpoint(),
		"AZURE_RESOURCE_MANAGER_AUDIENCE=" + emulator.ARMAudience,
		"AZURE_AUTHORITY_HOST=" + emu.AuthorityHost(),
		"IDENTITY_ENDPOINT=" + idEndpoint,
		"IDENTITY_HEADER=" + idHeader,
		"SSL_CERT_FILE=" + caFile,
		"NO_PROXY=*", "HTTPS_PROXY=", "HTTP_PROXY=",
	}
	if syncPeriod > 0 {
		env = append(env, "AZURE_SYNC_PERIOD="+syncPeriod.String())
	}
	return env
}

// startASO starts the controller and waits until its webhook server answers TLS.
func startASO(ctx context.Context, log *slog.Logger, binary string, c *cluster, env []string, logFile string) (*asoProcess, error) {
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	cmd := exec.Command(binary, "--crd-management", "none", "--webhook-port", strconv.Itoa(c.webhookPort),
		"--webhook-cert-dir", c.certDir, "--metrics-addr", "0", "--health-addr", "")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("anchor: start ASO controller %s: %w", binary, err)
	}
	p := &asoProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.webhookPort))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe only
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("anchor: ASO controller exited before serving webhooks (%v); see %s", p.err, logFile)
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.stop())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("anchor: ASO's webhook server not up on %s after 3m; see %s", addr, logFile), p.stop())
		}
	}
	log.Info("ASO controller serving", "pid", cmd.Process.Pid, "webhooks", addr)
	return p, nil
}

func (p *asoProcess) usage() (ProcUsage, error) {
	return readUsage("aso-controller", p.cmd.Process.Pid)
}

func (p *asoProcess) stop() error { return stopProcess(p.cmd, p.done) }

// kubeObjects maps manifest objects to Kubernetes objects and their resources.
type kubeObject struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
	aso bool
}

func (c *cluster) mapObjects(objs []manifest.Object) ([]kubeObject, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	out := make([]kubeObject, 0, len(objs))
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: deepCopy(o.Content)}
		if u.GetNamespace() == "" {
			u.SetNamespace(manifest.DefaultNamespace)
		}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("anchor: %s: no resource for %s (is its CRD in ASO_CRDS?): %w", o, gvk, err)
		}
		out = append(out, kubeObject{obj: u, gvr: m.Resource, aso: isASO(o)})
	}
	return out, nil
}

// ensureNamespaces creates the objects' namespaces and the controller's.
func (c *cluster) ensureNamespaces(ctx context.Context, objs []kubeObject) error {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	seen := map[string]bool{asoNamespace: true}
	names := []string{asoNamespace}
	for _, o := range objs {
		if ns := o.obj.GetNamespace(); !seen[ns] {
			seen[ns] = true
			names = append(names, ns)
		}
	}
	for _, ns := range names {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("anchor: create namespace %s: %w", ns, err)
		}
	}
	return nil
}

// applyAll server-side applies every object, parallelism at a time, retrying webhook and conflict errors for
// up to a minute each (the webhook server may still be warming up).
func (c *cluster) applyAll(ctx context.Context, objs []kubeObject, parallelism int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for _, o := range objs {
		g.Go(func() error {
			deadline := time.Now().Add(time.Minute)
			for {
				_, err := c.dyn.Resource(o.gvr).Namespace(o.obj.GetNamespace()).Apply(gctx, o.obj.GetName(), o.obj,
					metav1.ApplyOptions{FieldManager: "aso-anchor", Force: true})
				if err == nil {
					return nil
				}
				if time.Now().After(deadline) || gctx.Err() != nil {
					return fmt.Errorf("anchor: apply %s %s/%s: %w", o.obj.GetKind(), o.obj.GetNamespace(), o.obj.GetName(), err)
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	return g.Wait()
}

// waitReady watches every ASO resource type of objs until each object has Ready=True for its current
// generation; it returns when all are, or when ctx ends (with the ones not ready).
func (c *cluster) waitReady(ctx context.Context, objs []kubeObject, progress func(ready, total int)) error {
	want := map[string]bool{} // gvr|ns/name
	byGVR := map[schema.GroupVersionResource]bool{}
	for _, o := range objs {
		if o.aso {
			want[key(o.gvr, o.obj.GetNamespace(), o.obj.GetName())] = false
			byGVR[o.gvr] = true
		}
	}
	var mu sync.Mutex
	ready := 0
	allDone := make(chan struct{})
	observe := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
		k := key(gvr, u.GetNamespace(), u.GetName())
		mu.Lock()
		defer mu.Unlock()
		was, ok := want[k]
		if !ok {
			return
		}
		now := isReady(u)
		if now != was {
			want[k] = now
			if now {
				ready++
			} else {
				ready--
			}
			if progress != nil {
				progress(ready, len(want))
			}
			if ready == len(want) {
				select {
				case <-allDone:
				default:
					close(allDone)
				}
			}
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for gvr := range byGVR {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.watchLoop(wctx, gvr, observe)
		}()
	}
	defer func() {
		cancel() // ends the watches before waiting for them
		wg.Wait()
	}()
	if len(want) == 0 {
		return nil
	}
	select {
	case <-allDone:
		return nil
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		var missing []string
		for k, ok := range want {
			if !ok {
				missing = append(missing, k)
			}
		}
		return fmt.Errorf("anchor: %d of %d ASO resources not Ready (%v), e.g. %s", len(missing), len(want), ctx.Err(), strings.Join(first(missing, 5), ", "))
	}
}

// watchLoop lists and then watches one resource type in every namespace, again after each watch ends.
func (c *cluster) watchLoop(ctx context.Context, gvr schema.GroupVersionResource, observe func(schema.GroupVersionResource, *unstructured.Unstructured)) {
	for ctx.Err() == nil {
		list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		for i := range list.Items {
			observe(gvr, &list.Items[i])
		}
		w, err := c.dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true})
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					observe(gvr, u)
				}
			}
		}
		w.Stop()
	}
}

// isReady reports ASO's Ready=True for the object's current generation.
func isReady(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		og, _ := m["observedGeneration"].(int64)
		return m["status"] == "True" && (og == 0 || og == u.GetGeneration())
	}
	return false
}

// notReady returns the Ready condition of every ASO object that is not Ready, "Kind ns/name: reason: message".
func (c *cluster) notReady(ctx context.Context, objs []kubeObject) []string {
	var out []string
	for _, o := range objs {
		if !o.aso {
			continue
		}
		u, err := c.dyn.Resource(o.gvr).Namespace(o.obj.GetNamespace()).Get(ctx, o.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			out = append(out, fmt.Sprintf("%s %s/%s: %v", o.obj.GetKind(), o.obj.GetNamespace(), o.obj.GetName(), err))
			continue
		}
		if isReady(u) {
			continue
		}
		msg := "no Ready condition"
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cc := range conds {
			if m, _ := cc.(map[string]any); m["type"] == "Ready" {
				msg = fmt.Sprintf("%v %v: %v", m["status"], m["reason"], m["message"])
			}
		}
		out = append(out, fmt.Sprintf("%s %s/%s: %s", o.obj.GetKind(), o.obj.GetNamespace(), o.obj.GetName(), msg))
	}
	return out
}

func key(gvr schema.GroupVersionResource, ns, name string) string {
	return gvr.GroupResource().String() + "|" + ns + "/" + name
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// deepCopy copies a manifest's content through JSON, so that every number is one the dynamic client encodes.
func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// writeCA writes the emulator's CA certificate for ASO's SSL_CERT_FILE and gitaso's cloud configuration.
func writeCA(dir string, emu *emulator.Emulator) (caFile, cloudFile string, err error) {
	caFile, cloudFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cloud.json")
	if err := os.WriteFile(caFile, emu.CACertPEM(), 0o644); err != nil {
		return "", "", fmt.Errorf("anchor: %w", err)
	}
	if err := os.WriteFile(cloudFile, emu.CloudConfigJSON(caFile), 0o644); err != nil {
		return "", "", fmt.Errorf("anchor: %w", err)
	}
	return caFile, cloudFile, nil
}
