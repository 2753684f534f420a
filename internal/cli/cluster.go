package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/cluster"
)

// clusterSettings say how to reach the Kubernetes cluster gitaso runs beside
// (exports, credential Secrets, substitution sources, leader election).
// Without --kubeconfig or --in-cluster, gitaso works without a cluster.
type clusterSettings struct {
	kubeconfig, kubeContext string
	inCluster               bool
	qps                     float32
	burst                   int
	exports                 bool   // --cluster-exports
	instance                string // --cluster-instance
	conn                    *cluster.Cluster
}

func (c *clusterSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster gitaso runs beside: exports are applied there, credential Secrets and substitute-from sources read from there (default: no cluster)")
	fs.StringVar(&c.kubeContext, "kube-context", "", "kubeconfig context to use (default: its current context)")
	fs.BoolVar(&c.inCluster, "in-cluster", false, "use the pod's service account to reach the cluster gitaso runs in")
	fs.Float32Var(&c.qps, "kube-qps", 50, "requests per second gitaso sends to the Kubernetes API server at most (-1: no client-side limit)")
	fs.IntVar(&c.burst, "kube-burst", 100, "burst of requests to the Kubernetes API server above --kube-qps")
	fs.BoolVar(&c.exports, "cluster-exports", true, "with a cluster: write every operatorSpec export (configMaps, secrets, CEL expressions) into the resource's namespace with server-side apply (field manager gitaso)")
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
	if !s.kube.exports {
		return nil
	}
	cl, err := s.kube.connect()
	if err != nil || cl == nil {
		return err
	}
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{Instance: s.kube.instance, Logger: e.log})
	if err != nil {
		return err
	}
	e.cfg.Exports = x
	return nil
}
