package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/migrate"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/state"
)

// ErrNotInRepository is returned by handover when an ASO object of the
// namespace has no manifest in gitaso's repository: set to skip, it would
// be managed by no one.
var ErrNotInRepository = errors.New("ASO object not in gitaso's repository")

func handoverCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{}
	var namespace string
	cmd := &cobra.Command{
		Use:   "handover",
		Short: "Move a namespace from ASO to gitaso: adopt without a write, then set ASO's objects to reconcile-policy skip",
		Long: `handover moves the ASO objects of one namespace (--namespace) from ASO to gitaso, in this order:

  1. check: every ASO object of the namespace has its manifest in gitaso's repository (--repo/--dir),
     else nothing is done (a skipped object without one would be managed by no one);
  2. adopt: one run on the repository that writes nothing (as 'gitaso import' adopts): every resource
     of the repository is in the state, recorded from what Azure holds; a plan that would write is refused,
     naming each resource (make the repository say what ASO's objects say first);
  3. skip: ` + aso.AnnotationReconcilePolicy + `: skip on each ASO object of the namespace, with server-side
     apply under gitaso's field manager, never forced: an object whose policy another field manager sets
     (Flux or kubectl applying it from ASO's repository) is refused, naming it and the manager; the
     objects already set stay set;
  4. check: each object is read back with skip; a plan of the repository is shown (no changes).

From step 3 on, each resource is ASO's or gitaso's, never both and never neither: before its object says
skip, gitaso's runs refuse to write it (an ASO object there still manages it); once it says skip, gitaso's
state already holds it (step 2). An interruption anywhere leaves that true; run handover again to finish.
ASO's object stays in the cluster with skip, so 'gitaso export' can give the namespace back; with skip, ASO
deletes nothing in Azure when the object is deleted. Stop gitaso serve first (the state file's lock).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			if namespace == "" {
				return errors.New("--namespace is required: handover moves one namespace")
			}
			cl, err := s.requireCluster("handover")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			objs, err := asoObjects(ctx, cl, []string{namespace}, "")
			if err != nil {
				return err
			}
			if len(objs) == 0 {
				return fmt.Errorf("no ASO object in namespace %s: nothing to hand over", namespace)
			}
			// 1. Every object has its manifest.
			declared, err := declaredIn(cmd, s, stderr, namespace)
			if err != nil {
				return err
			}
			refs := make([]cluster.ObjectRef, 0, len(objs))
			var missing []string
			for _, o := range objs {
				u := unstructured.Unstructured{Object: o}
				ref := cluster.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
				if !declared[u.GroupVersionKind().Group+"/"+ref.Kind+"/"+ref.Name] {
					missing = append(missing, ref.String())
				}
				refs = append(refs, ref)
			}
			if len(missing) > 0 {
				sort.Strings(missing)
				return fmt.Errorf("%w: %v: import them first ('gitaso import --namespace %s'), or delete them from the cluster", ErrNotInRepository, missing, namespace)
			}
			// 2. Adopt without a write.
			if err := adoptNoWrite(cmd, s, stdout, stderr, "handover"); err != nil {
				return err
			}
			// 3 and 4. Skip, then read back.
			set, err := setPolicies(ctx, cl, refs, func(cluster.ObjectRef) aso.ReconcilePolicy { return aso.ReconcilePolicySkip })
			fmt.Fprintf(stdout, "%d of %d ASO objects of namespace %s now say %s: %s.\n", set, len(refs), namespace, aso.AnnotationReconcilePolicy, aso.ReconcilePolicySkip)
			if err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("%w (the %d set stay set and are gitaso's; the others stay ASO's; run handover again once fixed)", err, set)}
			}
			fmt.Fprintf(stdout, "gitaso manages namespace %s from its next run; ASO only reads it.\n", namespace)
			return nil
		},
	}
	s.register(cmd.Flags(), true)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace to hand over")
	return cmd
}

// declaredIn renders gitaso's repository (no Azure, no state) and returns
// the ASO objects it declares in namespace, "group/Kind/name".
func declaredIn(cmd *cobra.Command, s *settings, stderr io.Writer, namespace string) (map[string]bool, error) {
	objs, err := renderedIn(cmd, s, stderr, namespace)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, o := range objs {
		out[o.Group()+"/"+o.Kind()+"/"+o.Name()] = true
	}
	return out, nil
}

// renderedIn renders gitaso's repository as a plan does and returns its ASO
// objects in namespace.
func renderedIn(cmd *cobra.Command, s *settings, stderr io.Writer, namespace string) ([]manifest.Object, error) {
	s.ctx = cmd.Context()
	e, err := s.build(stderr, true, false)
	if err != nil {
		return nil, err
	}
	defer e.close()
	snap, err := e.src.Fetch(cmd.Context())
	if err != nil {
		return nil, reportInputErrors(stderr, err, "nothing was done")
	}
	var out []manifest.Object
	for _, o := range snap.Objects {
		if o.Namespace() == namespace && aso.IsASOGroup(o.Group()) {
			out = append(out, o)
		}
	}
	return out, nil
}

// setPolicies applies each object's policy (policyOf; "" releases
// gitaso's claim) in order, reads each back, and stops at the first
// failure. It returns how many were set.
func setPolicies(ctx context.Context, cl *cluster.Cluster, refs []cluster.ObjectRef, policyOf func(cluster.ObjectRef) aso.ReconcilePolicy) (int, error) {
	p, err := cluster.NewPolicies(cl)
	if err != nil {
		return 0, err
	}
	for i, ref := range refs {
		cur, err := p.Get(ctx, ref)
		if err != nil {
			return i, err
		}
		if cur == nil {
			return i, fmt.Errorf("%s: %w", ref, cluster.ErrObjectGone)
		}
		want := policyOf(ref)
		if _, err := p.Set(ctx, ref, cur.GetResourceVersion(), want); err != nil {
			return i, err
		}
		back, err := p.Get(ctx, ref)
		if err != nil {
			return i, err
		}
		if got := cluster.PolicyOf(back); back == nil || (want != "" && got != string(want)) {
			return i, fmt.Errorf("%s: read back with %s %q, want %q", ref, aso.AnnotationReconcilePolicy, got, want)
		}
	}
	return len(refs), nil
}

func exportCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{}
	var namespace, out string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Give a namespace back to ASO: write its ASO objects, set their reconcile policy back, and detach it from gitaso's state",
		Long: `export is the way back from 'gitaso handover', for one namespace (--namespace), in this order:

  1. write: the namespace's manifests, rendered from gitaso's repository (--repo/--dir: variables
     substituted), into --out as ASO objects, with the reconcile policy each should end with (its
     manifest's, none meaning ASO's default), laid out as 'gitaso import' lays out a repository;
  2. give back (with --kubeconfig): on each ASO object of the namespace still in the cluster, gitaso's
     claim on ` + aso.AnnotationReconcilePolicy + ` is released with server-side apply (or set to the manifest's
     policy): ASO manages it again;
  3. detach: every resource of the namespace is forgotten in the state file, with what it exported;
     nothing is sent to Azure and the resources stay as they are.

Between 2 and 3 gitaso's state still holds the resources, but its runs refuse to write a resource an ASO
object manages: never both. An interruption leaves that true; run export again to finish. Objects no longer
in the cluster are in --out: commit them where Flux applies ASO's objects (ASO adopts them as they are).
Then remove the namespace from gitaso's repository: its resources are no longer in the state, so nothing
is deleted. Stop gitaso serve first (the state file's lock).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			if namespace == "" || out == "" {
				return errors.New("--namespace and --out are required")
			}
			objs, err := renderedIn(cmd, s, stderr, namespace)
			if err != nil {
				return err
			}
			if len(objs) == 0 {
				return fmt.Errorf("gitaso's repository has no ASO object in namespace %s", namespace)
			}
			tree := &migrate.Tree{Title: "ASO objects exported by gitaso", Header: fmt.Sprintf("Namespace %s, rendered from gitaso's repository by `gitaso export` %s.", namespace, Version)}
			policies := map[cluster.ObjectRef]aso.ReconcilePolicy{}
			refs := make([]cluster.ObjectRef, 0, len(objs))
			for _, o := range objs {
				x, err := migrate.ForASO(o.Content)
				if err != nil {
					return fmt.Errorf("%s: %w", o, err)
				}
				tree.Objects = append(tree.Objects, x)
				ref := cluster.ObjectRef{APIVersion: o.APIVersion(), Kind: o.Kind(), Namespace: namespace, Name: o.Name()}
				refs = append(refs, ref)
				if p := o.Annotations()[aso.AnnotationReconcilePolicy]; p != "" {
					if policies[ref], err = aso.ParseReconcilePolicy(p); err != nil {
						return fmt.Errorf("%s: metadata.annotations[%s]: %w", o, aso.AnnotationReconcilePolicy, err)
					}
				}
			}
			// 1. Write.
			if err := migrate.WriteTree(out, tree); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d ASO objects of namespace %s written to %s.\n", len(tree.Objects), namespace, out)
			// 2. Give back.
			cl, err := s.kube.connect()
			if err != nil {
				return err
			}
			if cl != nil {
				present, err := inCluster(cmd.Context(), cl, refs)
				if err != nil {
					return err
				}
				n, err := setPolicies(cmd.Context(), cl, present, func(r cluster.ObjectRef) aso.ReconcilePolicy { return policies[r] })
				if err != nil {
					return &ExitError{Code: 1, Err: fmt.Errorf("%w (%d of %d given back; nothing detached: run export again once fixed)", err, n, len(present))}
				}
				fmt.Fprintf(stdout, "%d ASO objects in the cluster given back to ASO; %d not in the cluster (in %s).\n", n, len(refs)-len(present), out)
			}
			// 3. Detach.
			db, err := state.Open(s.stateFile)
			if err != nil {
				return err
			}
			defer db.Close()
			gone, err := reconcile.DetachNamespace(db, namespace)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d resources of namespace %s detached from %s; nothing was sent to Azure.\n", len(gone), namespace, s.stateFile)
			return nil
		},
	}
	s.register(cmd.Flags(), true)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace to give back to ASO")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the ASO objects into (must be empty or absent)")
	return cmd
}

// inCluster returns the refs whose object is in the cluster.
func inCluster(ctx context.Context, cl *cluster.Cluster, refs []cluster.ObjectRef) ([]cluster.ObjectRef, error) {
	p, err := cluster.NewPolicies(cl)
	if err != nil {
		return nil, err
	}
	var out []cluster.ObjectRef
	for _, r := range refs {
		u, err := p.Get(ctx, r)
		if err != nil {
			return nil, err
		}
		if u != nil {
			out = append(out, r)
		}
	}
	return out, nil
}
