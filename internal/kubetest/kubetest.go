package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Version is the Kubernetes version scripts/kube-binaries.sh builds.
const Version = "1.36.3"

// Env is a running API server.
type Env struct {
	// Config is an admin client configuration.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same admin user
	// (for a gitaso process started by the test).
	Kubeconfig string
	env        *envtest.Environment
}

// Assets returns the directory holding etcd and kube-apiserver, or "" when
// they are not built.
func Assets() string {
	dirs := []string{os.Getenv("GITASO_KUBE_ASSETS")}
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "gitaso", "kube-v"+Version))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if isExec(filepath.Join(d, "kube-apiserver")) && isExec(filepath.Join(d, "etcd")) {
			return d
		}
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start starts etcd and kube-apiserver for the test and stops them when it
// ends. It skips the test when the binaries are absent (fails under
// GITASO_REQUIRE_KUBE=1).
func Start(t testing.TB) *Env {
	t.Helper()
	dir := Assets()
	if dir == "" {
		msg := "kube-apiserver and etcd not built: run scripts/kube-binaries.sh (about 6–10 minutes once) or set GITASO_KUBE_ASSETS"
		if os.Getenv("GITASO_REQUIRE_KUBE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	te := &envtest.Environment{BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 90 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Logf("stop kube-apiserver: %v", err)
		}
	})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, te.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Env{Config: cfg, Kubeconfig: kc, env: te}
}

// Clientset returns a typed client for the admin user.
func (e *Env) Clientset() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.Config)
}

// Namespace creates a namespace (if it does not exist yet) and returns its
// name.
func (e *Env) Namespace(t testing.TB, name string) string {
	t.Helper()
	_, err := e.Clientset().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// User returns a kubeconfig file for a user named name in the given groups
// (who has no permissions until the test grants them with RBAC).
func (e *Env) User(t testing.TB, name string, groups ...string) (*rest.Config, string) {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, e.Config)
	if err != nil {
		t.Fatalf("add user %s: %v", name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig of %s: %v", name, err)
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("kubeconfig-%s", name))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return u.Config(), p
}
