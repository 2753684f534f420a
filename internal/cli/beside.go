package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/cluster"
)

// besideSettings are the flags of plans beside ASO (plan and serve
// --beside-aso) and of the scope of ASO objects read from the cluster.
type besideSettings struct {
	enabled    bool     // --beside-aso
	namespaces []string // --aso-namespace
	selector   string   // --aso-selector
}

func (b *besideSettings) register(fs *pflag.FlagSet) {
	fs.BoolVar(&b.enabled, "beside-aso", false, "plan beside ASO, which applies the repository: gitaso never writes to Azure (a read-only client: Reader suffices) nor to the cluster (no exports), keeps no resource state, and shows what ASO would PUT, adopt or delete once the revision reaches the cluster, with each ASO object's Ready condition and reconcile policy (docs/beside-aso.md)")
}

// registerScope registers the scope of the ASO objects read from the
// cluster (every command with a cluster).
func (b *besideSettings) registerScope(fs *pflag.FlagSet) {
	fs.StringSliceVar(&b.namespaces, "aso-namespace", nil, "with a cluster: read ASO objects only in these namespaces (repeatable; default: every namespace); beside ASO, an object of this scope the repository does not have is one ASO would delete")
	fs.StringVar(&b.selector, "aso-selector", "", "with a cluster: read only the ASO objects this label selector selects (e.g. app.kubernetes.io/part-of=platform)")
}

// wireASO gives the reconciler the cluster's ASO objects: beside ASO to
// plan what ASO would do, managing to refuse the resources ASO manages.
// Without a cluster, beside ASO plans against Azure alone.
func (s *settings) wireASO(e *env) error {
	e.cfg.BesideASO = s.beside.enabled
	if s.offline {
		if s.beside.enabled {
			return errors.New("--beside-aso plans against live Azure: it cannot be --offline")
		}
		return nil
	}
	cl, err := s.kube.connect()
	if err != nil || cl == nil {
		if err == nil && s.beside.enabled {
			e.log.Info("beside ASO without a cluster: planned against Azure alone (set --kubeconfig or --in-cluster to see ASO's objects)")
		}
		return err
	}
	opts := cluster.ASOListOptions{Namespaces: s.beside.namespaces, LabelSelector: strings.TrimSpace(s.beside.selector)}
	e.cfg.ASO = func(ctx context.Context) ([]cluster.ASOObject, error) {
		return cl.ListASOObjects(ctx, opts)
	}
	return nil
}

// checkBeside refuses the flags that would write beside ASO.
func (s *settings) checkBeside(leaderElect bool) error {
	if !s.beside.enabled {
		return nil
	}
	if leaderElect {
		return errors.New("--beside-aso writes nothing to the cluster: it cannot hold a --leader-elect Lease (run one replica)")
	}
	return nil
}
