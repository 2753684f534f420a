package cli

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/cluster"
)

// clusterSettings say how to reach the Kubernetes cluster gitaso runs beside
// (exports, credential Secrets, substitution sources, leader election).
// Without --kubeconfig or --in-cluster, gitaso works without a cluster.
type clusterSettings struct {
	kubeconfig, kubeContext string
	inCluster               bool
}

func (c *clusterSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster gitaso runs beside: exports are applied there, credential Secrets and substitute-from sources read from there (default: no cluster)")
	fs.StringVar(&c.kubeContext, "kube-context", "", "kubeconfig context to use (default: its current context)")
	fs.BoolVar(&c.inCluster, "in-cluster", false, "use the pod's service account to reach the cluster gitaso runs in")
}

// connect returns the cluster, or nil when none is configured.
func (c *clusterSettings) connect() (*cluster.Cluster, error) {
	cl, err := cluster.Connect(cluster.Options{Kubeconfig: c.kubeconfig, Context: c.kubeContext, InCluster: c.inCluster})
	if errors.Is(err, cluster.ErrNotConfigured) {
		return nil, nil
	}
	return cl, err
}
