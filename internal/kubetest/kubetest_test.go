package kubetest_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/internal/kubetest"
)

func TestStart(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v"+kubetest.Version {
		t.Errorf("server version %s, want v%s", v.GitVersion, kubetest.Version)
	}
	ns := env.Namespace(t, "kubetest")
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
