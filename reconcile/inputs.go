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
// resources: every namespace's aso-credential, the Secrets named by
// serviceoperator.azure.com/credential-from, and the Secrets the specs
// reference (SecretReference, SecretMapReference: an administrator
// password) and the repository does not declare, each in the resource's
// namespace: an imported repository holds none of them (gitaso import
// copies no Secret), and ASO read them from the cluster.
func credentialKeys(snap *manifest.Snapshot) []string {
	set := map[string]bool{}
	declared := map[string]bool{}
	for _, o := range snap.Objects {
		if o.IsSecret() {
			declared[o.Namespace()+"/"+o.Name()] = true
		}
	}
	for _, o := range snap.Objects {
		if !aso.IsASOGroup(o.Group()) {
			continue
		}
		ns := o.Namespace()
		set[ns+"/"+aso.NamespaceCredentialSecret] = true
		if name := o.Annotations()[aso.AnnotationCredentialFrom]; name != "" {
			set[ns+"/"+name] = true
		}
		k, ok := aso.LookupAPIVersion(o.APIVersion(), o.Kind())
		if !ok {
			continue
		}
		deps, _ := aso.Dependencies(k, o.Spec()) // errors are the planner's to report
		for _, d := range deps {
			if (d.Type == aso.DepSecret || d.Type == aso.DepSecretMap) && !declared[ns+"/"+d.Name] {
				set[ns+"/"+d.Name] = true
			}
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
