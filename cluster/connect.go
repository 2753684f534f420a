package cluster

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// FieldManager is the server-side apply field manager of everything gitaso
// writes into a cluster.
const FieldManager = "gitaso"

// Options say how to reach the cluster.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file (its current context).
	Kubeconfig string
	// Context overrides the kubeconfig's current context.
	Context string
	// InCluster uses the pod's service account (rest.InClusterConfig).
	InCluster bool
	// QPS and Burst bound the client's request rate (client-go's defaults
	// of 5 and 10 when zero are raised to 50 and 100).
	QPS   float32
	Burst int
}

// ErrNotConfigured is returned by Connect when Options name no cluster.
var ErrNotConfigured = errors.New("no cluster configured")

// Cluster is a connection to one Kubernetes API server.
type Cluster struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
}

// Connect builds a client from a kubeconfig file or the in-cluster
// configuration. It does not contact the server.
func Connect(o Options) (*Cluster, error) {
	var cfg *rest.Config
	var err error
	switch {
	case o.InCluster && o.Kubeconfig != "":
		return nil, errors.New("set either a kubeconfig or in-cluster configuration, not both")
	case o.InCluster:
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
	case o.Kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
		if cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig(); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
		}
	default:
		return nil, ErrNotConfigured
	}
	return FromConfig(cfg, o)
}

// FromConfig wraps an existing client configuration (tests).
func FromConfig(cfg *rest.Config, o Options) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS == 0 {
		cfg.QPS = 50
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gitaso"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Cluster{Config: cfg, Clientset: cs}, nil
}
