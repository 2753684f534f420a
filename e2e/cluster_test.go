package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/internal/kubetest"
)

// TestOnboardingBesideACluster runs the seeds' whole onboarding from one
// commit with gitaso beside a real kube-apiserver, as a platform team runs
// it: platform-vars lives in the cluster (not in Git, as in the seeds), the
// cluster's OIDC issuer comes from the cluster itself (--cluster-oidc-var),
// and team-a's clientId flows from the identity's export into team-a's
// credential in the same run. Afterwards the team identity's ConfigMap is in
// the cluster, written by gitaso with server-side apply, holding the
// clientId Azure generated, and a Pod reading it with configMapKeyRef
// passes a server-side dry run.
func TestOnboardingBesideACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts the emulator and a kube-apiserver")
	}
	kube := kubetest.Start(t)
	cs := kube.Clientset()
	ctx := t.Context()
	for _, ns := range []string{"platform", "team-a"} {
		kube.Namespace(t, ns)
	}
	issuer := clusterIssuer(t, kube)

	dir := t.TempDir()
	bin := filepath.Join(dir, "gitaso")
	if out, err := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The emulator mints the workload-identity token with the cluster's
	// issuer: the federated credential (issuer ${CLUSTER_OIDC}) must trust it.
	env := startEmulator(t, bin, filepath.Join(dir, "emulator"), issuer)

	// platform-vars in the cluster: nothing Azure generates, no CLUSTER_OIDC.
	if _, err := cs.CoreV1().ConfigMaps("platform").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-vars", Namespace: "platform"},
		Data:       map[string]string{"SUBSCRIPTION_ID": env["AZURE_SUBSCRIPTION_ID"], "TENANT_ID": env["AZURE_TENANT_ID"]},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// One commit: the platform's onboarding and team-a's resources, without
	// platform-vars.yaml.
	repo := filepath.Join(dir, "repo")
	for _, sub := range []string{"platform", "team-a"} {
		files, _ := filepath.Glob(filepath.Join("..", "examples", "onboarding", sub, "*.yaml"))
		for _, f := range files {
			if filepath.Base(f) == "platform-vars.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(repo, sub), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, sub, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "onboard team-a"}} {
		c := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	apply := exec.CommandContext(ctx, bin, "apply", "--repo", repo, "--branch", "main", "--cache-dir", filepath.Join(dir, "cache"),
		"--state", filepath.Join(dir, "state.db"), "--kubeconfig", kube.Kubeconfig,
		"--substitute-from", "platform/platform-vars", "--substitute-from", "ConfigMap/platform/team-a-vars", "--substitute-strict",
		"--cluster-oidc-var", "CLUSTER_OIDC")
	apply.Env = os.Environ()
	for k, v := range env {
		apply.Env = append(apply.Env, k+"="+v)
	}
	out, err := apply.CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	for _, want := range []string{
		"team-a/StorageAccount/teamastorage01 is known after apply",
		"Applying what was known after apply, now that its values exist",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	// Two phases, each with its results line, nothing failed: 11 platform
	// resources, then team-a's 7 with team-a's own credential.
	if n := strings.Count(string(out), " 0 failed, 0 skipped."); n != 2 || !strings.Contains(string(out), "\n7 applied,") {
		t.Errorf("want two phases without failures, the second applying team-a's 7 resources:\n%s", out)
	}

	// The team identity's ConfigMap is in the cluster, owned by gitaso.
	cm, err := cs.CoreV1().ConfigMaps("platform").Get(ctx, "team-a-identity-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the identity's export is not in the cluster: %v\n%s", err, out)
	}
	clientID := cm.Data["clientId"]
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(clientID) || cm.Labels["app.kubernetes.io/managed-by"] != "gitaso" {
		t.Errorf("ConfigMap platform/team-a-identity-settings: data %v, labels %v", cm.Data, cm.Labels)
	}
	if vars, err := cs.CoreV1().ConfigMaps("platform").Get(ctx, "team-a-vars", metav1.GetOptions{}); err != nil || vars.Data["TEAM_A_CLIENT_ID"] != clientID {
		t.Errorf("ConfigMap platform/team-a-vars = %v (%v), want TEAM_A_CLIENT_ID %s", vars, err, clientID)
	}
	// The clientId team-a's credential signed in with is that one: the
	// emulator accepted the federated token for exactly that identity.
	for _, f := range cm.ManagedFields {
		if f.Manager != "gitaso" {
			t.Errorf("field manager %q also owns fields of the export", f.Manager)
		}
	}

	// A workload reading it, as the seeds' FAQ shows.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a-app", Namespace: "platform"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Env: []corev1.EnvVar{{Name: "AZURE_CLIENT_ID", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: "clientId"},
			}}},
		}}},
	}
	if _, err := cs.CoreV1().Pods("platform").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a Pod reading the export fails a server-side dry run: %v", err)
	}
}

// clusterIssuer reads the API server's service-account issuer.
func clusterIssuer(t *testing.T, kube *kubetest.Env) string {
	t.Helper()
	b, err := kube.Clientset().CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Issuer string }
	if err := json.Unmarshal(b, &doc); err != nil || doc.Issuer == "" {
		t.Fatalf("OIDC discovery: %s (%v)", b, err)
	}
	return doc.Issuer
}

// startEmulator runs `gitaso emulator` and returns the environment it prints.
func startEmulator(t *testing.T, bin, dir, issuer string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "emulator", "--addr", "127.0.0.1:"+freePort(t), "--dir", dir,
		"--federated-token-file", filepath.Join(dir, "federated-token"), "--federated-issuer", issuer)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	env := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for env["AZURE_FEDERATED_TOKEN_FILE"] == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("emulator exited:\n%s", stderr.String())
			}
			if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok && strings.HasPrefix(l, "export ") {
				env[k] = strings.Trim(v, `"'`)
			}
		case <-deadline:
			t.Fatalf("emulator did not start:\n%s", stderr.String())
		}
	}
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	return env
}
