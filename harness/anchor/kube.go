package anchor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// asoLabel is the label ASO's controller selects its CRDs by (crdmanagement.ServiceOperatorAppLabel).
const asoLabel = "app.kubernetes.io/name"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// cluster is a kube-apiserver and etcd (envtest) with ASO's CRDs and webhook configurations installed, the
// webhooks pointed at a local port served by ASO's controller.
type cluster struct {
	env         *envtest.Environment
	cfg         *rest.Config
	dyn         dynamic.Interface
	kubeconfig  string
	webhookPort int
	certDir     string
	crds        []*unstructured.Unstructured // as installed
}

// startCluster starts etcd and kube-apiserver from assets and installs the CRDs and webhook configurations of
// crdDir (every *.yaml below it; other kinds are ignored).
func startCluster(ctx context.Context, assets, crdDir, work string) (*cluster, error) {
	crds, mut, val, err := readCRDDir(crdDir)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("anchor: no CustomResourceDefinition in %s", crdDir)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	for _, w := range mut {
		for i := range w.Webhooks {
			localURL(&w.Webhooks[i].ClientConfig, port)
		}
	}
	for _, w := range val {
		for i := range w.Webhooks {
			localURL(&w.Webhooks[i].ClientConfig, port)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute,
		WebhookInstallOptions: envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingPort: port,
			MutatingWebhooks: mut, ValidatingWebhooks: val}}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("anchor: start kube-apiserver and etcd from %s: %w", assets, err)
	}
	c := &cluster{env: env, cfg: cfg, webhookPort: port, certDir: env.WebhookInstallOptions.LocalServingCertDir}
	c.kubeconfig = filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("anchor: %w", err), c.stop())
	}
	cfg.QPS, cfg.Burst = -1, 0 // the harness's own applies are not what is measured
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, errors.Join(fmt.Errorf("anchor: %w", err), c.stop())
	}
	ca := env.WebhookInstallOptions.LocalServingCAData
	for _, crd := range crds {
		prepareCRD(crd, port, ca)
		if _, err := c.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, errors.Join(fmt.Errorf("anchor: install CRD %s: %w", crd.GetName(), err), c.stop())
		}
		c.crds = append(c.crds, crd)
	}
	if err := c.waitEstablished(ctx); err != nil {
		return nil, errors.Join(err, c.stop())
	}
	return c, nil
}

func (c *cluster) stop() error {
	if err := c.env.Stop(); err != nil {
		return fmt.Errorf("anchor: stop kube-apiserver: %w", err)
	}
	return nil
}

// waitEstablished waits until every CRD is Established.
func (c *cluster) waitEstablished(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, crd := range c.crds {
		for {
			got, err := c.dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && hasCondition(got.Object, "Established", "True") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("anchor: CRD %s not established after 2m (%v)", crd.GetName(), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// processes returns etcd's and kube-apiserver's usage (they are envtest's children, so this process's).
func (c *cluster) usage() []ProcUsage {
	var out []ProcUsage
	for _, name := range []string{"etcd", "kube-apiserver"} {
		for _, pid := range children(name) {
			if u, err := readUsage(name, pid); err == nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// prepareCRD labels a CRD for ASO's controller and points its conversion webhook at the local webhook server
// (ASO's kustomize patches do the same with a Service and cert-manager).
func prepareCRD(crd *unstructured.Unstructured, port int, ca []byte) {
	labels := crd.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[asoLabel] = "azure-service-operator"
	crd.SetLabels(labels)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) < 2 {
		return
	}
	_ = unstructured.SetNestedField(crd.Object, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d/convert", port),
				"caBundle": base64.StdEncoding.EncodeToString(ca),
			},
		},
	}, "spec", "conversion")
}

func localURL(cc *admissionv1.WebhookClientConfig, port int) {
	if cc.Service == nil {
		return
	}
	p := "/"
	if cc.Service.Path != nil {
		p = *cc.Service.Path
	}
	u := fmt.Sprintf("https://127.0.0.1:%d%s", port, p)
	cc.URL, cc.Service = &u, nil
}

// readCRDDir reads every YAML document below dir: CRDs, mutating and validating webhook configurations.
func readCRDDir(dir string) (crds []*unstructured.Unstructured, mut []*admissionv1.MutatingWebhookConfiguration,
	val []*admissionv1.ValidatingWebhookConfiguration, err error) {
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := rd.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("anchor: %s: %w", p, err)
			}
			var head struct{ Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				return fmt.Errorf("anchor: %s: %w", p, err)
			}
			switch head.Kind {
			case "CustomResourceDefinition":
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(doc, &u.Object); err != nil {
					return fmt.Errorf("anchor: %s: %w", p, err)
				}
				crds = append(crds, u)
			case "MutatingWebhookConfiguration":
				w := &admissionv1.MutatingWebhookConfiguration{}
				if err := yaml.Unmarshal(doc, w); err != nil {
					return fmt.Errorf("anchor: %s: %w", p, err)
				}
				mut = append(mut, w)
			case "ValidatingWebhookConfiguration":
				w := &admissionv1.ValidatingWebhookConfiguration{}
				if err := yaml.Unmarshal(doc, w); err != nil {
					return fmt.Errorf("anchor: %s: %w", p, err)
				}
				val = append(val, w)
			}
		}
	})
	return crds, mut, val, err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("anchor: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func hasCondition(obj map[string]any, typ, status string) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == status
		}
	}
	return false
}
