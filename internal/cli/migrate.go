package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/migrate"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/state"
)

// The three steps from ASO to gitaso and the way back (docs/migration.md):
// import (a repository from the cluster's ASO objects, adopted without a
// write), handover (ASO's objects set to skip, gitaso manages) and export
// (ASO's objects given back, gitaso forgets). Each needs the state file to
// itself: stop gitaso serve first (its lock says so).

// migrateFlags are the flags the three commands share beyond settings.
type migrateFlags struct {
	namespaces       []string
	selector         string
	operatorManagers []string
}

// requireCluster connects to the cluster the command needs.
func (s *settings) requireCluster(what string) (*cluster.Cluster, error) {
	cl, err := s.kube.connect()
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return nil, fmt.Errorf("%s needs the cluster ASO runs in: --kubeconfig or --in-cluster", what)
	}
	return cl, nil
}

func importCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{}
	var f migrateFlags
	var out string
	var adopt bool
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write a repository of clean manifests from a cluster's ASO objects, and adopt their resources without a write",
		Long: `import reads the ASO objects of a cluster (--namespace, repeatable, default every namespace; --selector
a label selector) and writes a repository into --out (which must be empty or absent): one directory per
namespace, one file per object, a kustomization.yaml in each directory and one at the top, and IMPORT.md.
Each manifest is what its author wrote: no status, no server metadata, none of ASO's own annotations or
finalizer, no default ASO filled in (read from kubectl's last-applied annotation, else from the managed
fields of every field manager but ASO's controller), ownerReferences as spec.owner. Secrets and ConfigMaps
the objects read are named in IMPORT.md, never copied: gitaso reads them from the cluster as ASO does.

Then (unless --adopt=false) it adopts every resource into the state file (--state; created when missing)
without writing to Azure: it marks the state as 'gitaso state import' does and runs once on the new
repository, reading every resource from Azure; a plan that would write anything (a resource that differs
from its object, one missing in Azure, a deletion of something the state held) is refused, naming each,
and nothing of it is applied. The first plan after an import is "no changes".

ASO keeps managing everything: import writes nothing to the cluster either. 'gitaso handover' is the next
step ('gitaso state import' only marks a state for manifests you already have; this command is the one
that reads a cluster). See docs/migration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			if out == "" {
				return errors.New("--out is required: the directory the repository is written to")
			}
			if s.repo != "" || s.dir != "" {
				return errors.New("import reads the cluster and writes --out: --repo and --dir are for the commands that read a repository")
			}
			cl, err := s.requireCluster("import")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tree, skipped, err := importTree(ctx, cl, f)
			if err != nil {
				return err
			}
			if len(tree.Objects) == 0 {
				return fmt.Errorf("no ASO object in %s: nothing to import", scopeOf(f))
			}
			if err := migrate.WriteTree(out, tree); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d ASO objects of %s written to %s (see %s/%s).\n", len(tree.Objects), scopeOf(f), out, out, migrate.ReportFile)
			for _, sk := range skipped {
				fmt.Fprintf(stdout, "  not imported: %s\n", sk)
			}
			if uses := tree.Uses(); len(uses) > 0 {
				fmt.Fprintf(stdout, "Read from the cluster, not copied (%d):\n", len(uses))
				for _, u := range uses {
					fmt.Fprintf(stdout, "  %s %s/%s\n", u.Kind, u.Namespace, u.Name)
				}
			}
			if !adopt {
				return nil
			}
			s.dir = out
			return adoptNoWrite(cmd, s, stdout, stderr, "import")
		},
	}
	s.register(cmd.Flags(), true)
	f.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "directory to write the repository into (must be empty or absent)")
	cmd.Flags().BoolVar(&adopt, "adopt", true, "adopt every resource into --state without a write to Azure")
	return cmd
}

func (f *migrateFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&f.namespaces, "namespace", "n", nil, "namespace of the ASO objects (repeatable; default every namespace)")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "label selector of the ASO objects, e.g. team=a")
	cmd.Flags().StringSliceVar(&f.operatorManagers, "aso-field-manager", nil, "field managers whose fields are ASO's controller's, besides the one that writes the objects' status (repeatable)")
}

func scopeOf(f migrateFlags) string {
	s := "every namespace"
	if len(f.namespaces) > 0 {
		s = "namespace(s) " + strings.Join(f.namespaces, ", ")
	}
	if f.selector != "" {
		s += " matching " + f.selector
	}
	return s
}

// importTree lists and cleans the cluster's ASO objects. Objects of kinds
// gitaso's catalog lacks are left out, named in skipped.
func importTree(ctx context.Context, cl *cluster.Cluster, f migrateFlags) (*migrate.Tree, []string, error) {
	objs, err := asoObjects(ctx, cl, f.namespaces, f.selector)
	if err != nil {
		return nil, nil, err
	}
	tree := &migrate.Tree{Header: fmt.Sprintf("Read from the cluster (%s) by `gitaso import` %s on %s.", scopeOf(f), Version, time.Now().UTC().Format(time.RFC3339))}
	var skipped []string
	nss := map[string]bool{}
	for _, o := range objs {
		c, err := migrate.Clean(o, migrate.Options{OperatorManagers: f.operatorManagers})
		if errors.Is(err, migrate.ErrNotASO) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		tree.Objects = append(tree.Objects, c)
		nss[c.Namespace] = true
	}
	for ns := range nss {
		_, err := cl.Clientset.CoreV1().Secrets(ns).Get(ctx, aso.NamespaceCredentialSecret, metav1.GetOptions{})
		switch {
		case err == nil:
			tree.NamespaceCredentials = append(tree.NamespaceCredentials, ns)
		case apierrors.IsNotFound(err):
		default:
			return nil, nil, fmt.Errorf("read Secret %s/%s: %w", ns, aso.NamespaceCredentialSecret, err)
		}
	}
	sort.Strings(tree.NamespaceCredentials)
	return tree, skipped, nil
}

// adoptNoWrite marks the state for an import and runs once on s's
// repository with nothing written to Azure or to the cluster.
func adoptNoWrite(cmd *cobra.Command, s *settings, stdout, stderr io.Writer, why string) error {
	if _, err := state.MarkImportFromASO(s.stateFile, time.Now()); err != nil {
		return err
	}
	s.kube.exports = false // ASO writes its objects' exports until the hand-over
	s.reach, s.ctx = true, cmd.Context()
	e, err := s.build(stderr, false, true)
	if err != nil {
		return err
	}
	defer e.close()
	r := reconcile.New(e.src, e.db, e.clients, e.cfg, e.log)
	rep, err := r.Once(cmd.Context(), reconcile.Options{Trigger: why, Refresh: true, All: true, WriteNothing: true})
	var adopted, unchanged, phases int
	for cur := rep; cur != nil; cur = cur.Then {
		phases++
		if cur.Plan == nil {
			continue
		}
		for _, res := range cur.Plan.Resources {
			switch {
			case res.Action == planner.Adopt && res.NoWrite:
				adopted++
			case res.Action == planner.NoOp:
				unchanged++
			}
		}
	}
	if errors.Is(err, reconcile.ErrWouldWrite) {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s adopts only what Azure holds as declared, and writes nothing: %w", why, err)}
	}
	if err != nil {
		return reportInputErrors(stderr, err, "nothing was adopted")
	}
	for cur := rep; cur != nil; cur = cur.Then {
		if cur.Result != nil && cur.Result.Failed() {
			return &ExitError{Code: 1, Err: errors.New(cur.Run.Error)}
		}
	}
	if rep != nil && rep.Graph != nil {
		last := rep
		for last.Then != nil {
			last = last.Then
		}
		if n := len(last.Graph.Deferred); n > 0 {
			return &ExitError{Code: 1, Err: fmt.Errorf("%d objects are still known after apply: their values were not exported", n)}
		}
	}
	fmt.Fprintf(stdout, "Adopted into %s without a write to Azure: %d adopted, %d already in the state (%d phase(s)).\n", s.stateFile, adopted, unchanged, phases)
	return nil
}

// asoObjects lists the cluster's ASO objects of the namespaces (every one
// when none) matching selector, as the API server returns them.
func asoObjects(ctx context.Context, cl *cluster.Cluster, namespaces []string, selector string) ([]map[string]any, error) {
	return listASOObjects(ctx, cl, namespaces, selector)
}
