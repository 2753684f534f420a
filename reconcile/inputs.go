package reconcile

import (
	"context"
	"sort"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
)

// ClusterSecrets reads credential Secrets from the cluster gitaso runs
// beside (cluster.Inputs.Secrets), keyed "namespace/name"; absent ones are
// left out. Nil in Config: no cluster.
type ClusterSecrets func(ctx context.Context, keys []string) (map[string]map[string]string, error)

// credentialKeys lists the Secrets ASO would read for the snapshot's
// resources: every namespace's aso-credential and the Secrets named by
// serviceoperator.azure.com/credential-from, in the resource's namespace.
func credentialKeys(snap *manifest.Snapshot) []string {
	set := map[string]bool{}
	for _, o := range snap.Objects {
		if !aso.IsASOGroup(o.Group()) {
			continue
		}
		ns := o.Namespace()
		set[ns+"/"+aso.NamespaceCredentialSecret] = true
		if name := o.Annotations()[aso.AnnotationCredentialFrom]; name != "" {
			set[ns+"/"+name] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// secretsOutsideGit merges the credential Secrets that do not live in the
// repository: --credentials-dir wins over the cluster (the repository's own
// Secrets win over both, in planner.Build).
func (r *Reconciler) secretsOutsideGit(ctx context.Context, snap *manifest.Snapshot) (map[string]map[string]string, error) {
	var local map[string]map[string]string
	if r.cfg.LocalSecrets != nil {
		var err error
		if local, err = r.cfg.LocalSecrets(); err != nil {
			return nil, err
		}
	}
	if r.cfg.ClusterSecrets == nil {
		return local, nil
	}
	fromCluster, err := r.cfg.ClusterSecrets(ctx, credentialKeys(snap))
	if err != nil {
		return nil, err
	}
	for k, v := range local {
		fromCluster[k] = v
	}
	return fromCluster, nil
}
