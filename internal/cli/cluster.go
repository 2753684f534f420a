package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source/render"
)

// clusterSettings say how to reach the Kubernetes cluster gitaso runs beside
// (exports, credential Secrets, substitution sources, leader election).
// Without --kubeconfig or --in-cluster, gitaso works without a cluster.
type clusterSettings struct {
	kubeconfig, kubeContext string
	inCluster               bool
	qps                     float32
	burst                   int
	exports                 bool     // --cluster-exports
	instance                string   // --cluster-instance
	oidcVar                 string   // --cluster-oidc-var
	namespaces              []string // --cluster-namespaces
	conn                    *cluster.Cluster
	inputs                  *cluster.Inputs
}

func (c *clusterSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster gitaso runs beside: exports are applied there, credential Secrets and substitute-from sources read from there (default: no cluster)")
	fs.StringVar(&c.kubeContext, "kube-context", "", "kubeconfig context to use (default: its current context)")
	fs.BoolVar(&c.inCluster, "in-cluster", false, "use the pod's service account to reach the cluster gitaso runs in")
	fs.Float32Var(&c.qps, "kube-qps", 50, "requests per second gitaso sends to the Kubernetes API server at most (-1: no client-side limit)")
	fs.IntVar(&c.burst, "kube-burst", 100, "burst of requests to the Kubernetes API server above --kube-qps")
	fs.StringVar(&c.oidcVar, "cluster-oidc-var", "", "with a cluster: set this substitution variable (e.g. CLUSTER_OIDC) to the cluster's OIDC issuer, read from its API server's /.well-known/openid-configuration, unless --substitute sets it")
	fs.BoolVar(&c.exports, "cluster-exports", true, "with a cluster: write every operatorSpec export (configMaps, secrets, CEL expressions) into the resource's namespace with server-side apply (field manager gitaso)")
	fs.StringSliceVar(&c.namespaces, "cluster-namespaces", nil, "with a cluster: the only namespaces gitaso reads Secrets and ConfigMaps from and lists its exports in (one watch each), so that a Role in each namespace suffices instead of a ClusterRole reading every Secret (default: all namespaces)")
	fs.StringVar(&c.instance, "cluster-instance", "gitaso", "label value (gitaso.io/instance) of the objects this gitaso writes into the cluster; gitaso removes only its own instance's objects, so two gitaso daemons on one cluster need different values")
}

// connect returns the cluster, or nil when none is configured. The
// connection is made once per command.
func (c *clusterSettings) connect() (*cluster.Cluster, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	cl, err := cluster.Connect(cluster.Options{Kubeconfig: c.kubeconfig, Context: c.kubeContext, InCluster: c.inCluster, QPS: c.qps, Burst: c.burst})
	if errors.Is(err, cluster.ErrNotConfigured) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.conn = cl
	return cl, nil
}

// wireExports gives the reconciler the cluster as the sink of exports (serve
// and apply; plans write nothing).
func (s *settings) wireExports(e *env) error {
	if !s.kube.exports || s.beside.enabled { // beside ASO, ASO writes them
		return nil
	}
	cl, err := s.kube.connect()
	if err != nil || cl == nil {
		return err
	}
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{Instance: s.kube.instance, ListNamespaces: s.kube.namespaces, Logger: e.log})
	if err != nil {
		return err
	}
	e.cfg.Exports = x
	return nil
}

// inputsOf returns the cluster's input reader (nil without a cluster).
func (c *clusterSettings) inputsOf(log *slog.Logger) (*cluster.Inputs, error) {
	if c.inputs != nil {
		return c.inputs, nil
	}
	cl, err := c.connect()
	if err != nil || cl == nil {
		return nil, err
	}
	c.inputs = cluster.NewInputs(cl, log)
	c.inputs.Namespaces = c.namespaces
	return c.inputs, nil
}

// substitution chains the cluster after gitaso's exports as a source of
// substitute-from values (Flux reads them from the cluster), and sets
// --cluster-oidc-var from the cluster's OIDC issuer unless --substitute
// set it.
func (c *clusterSettings) substitution(log *slog.Logger, exported render.ExportedData, vars render.Vars) (render.ExportedData, error) {
	in, err := c.inputsOf(log)
	if err != nil || in == nil {
		return exported, err
	}
	if c.oidcVar != "" {
		if _, set := vars[c.oidcVar]; !set {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			issuer, err := in.OIDCIssuer(ctx)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("--cluster-oidc-var %s: %w", c.oidcVar, err)
			}
			vars[c.oidcVar] = issuer
		}
	}
	return func(secret bool, namespace, name string) (map[string]string, bool) {
		if exported != nil {
			if d, ok := exported(secret, namespace, name); ok {
				return d, true
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return in.Lookup(ctx, secret, namespace, name)
	}, nil
}

// wireInputs reads credential Secrets from the cluster on every run.
func (s *settings) wireInputs(e *env) error {
	in, err := s.kube.inputsOf(e.log)
	if err != nil || in == nil {
		return err
	}
	e.cfg.ClusterSecrets = in.Secrets
	return nil
}

// watchInputs (serve) watches the credential Secrets and substitution
// sources read from the cluster: a change triggers a run (with a refresh),
// so that a rotated credential or a changed platform-vars applies without
// a commit.
func (s *settings) watchInputs(ctx context.Context, r *reconcile.Reconciler) error {
	in := s.kube.inputs
	if in == nil {
		return nil
	}
	in.OnChange = func() { r.Trigger(true) }
	return in.Start(ctx)
}
