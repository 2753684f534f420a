package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/aso"
)

// ReportFile is the file beside the manifests that says what an import
// read and what the repository still needs (it is not YAML, so gitaso and
// kustomize never read it as a manifest).
const ReportFile = "IMPORT.md"

// ErrNotEmpty is returned by WriteTree when the output directory exists
// and holds something: an import never overwrites a repository.
var ErrNotEmpty = errors.New("output directory is not empty")

// Tree is what an import writes.
type Tree struct {
	// Objects are the cleaned objects.
	Objects []*Object
	// NamespaceCredentials are the namespaces whose aso-credential Secret
	// exists in the cluster: their objects sign in with it (listed, never
	// copied).
	NamespaceCredentials []string
	// Title is the report's title ("Imported ASO objects" when empty).
	Title string
	// Header is the first paragraph of the report (where the objects came
	// from: cluster, namespaces, selector).
	Header string
}

// FileName is the file an object is written to inside its namespace's
// directory: the first label of its group, its kind and its name, lower
// case ("resources-resourcegroup-snd-infra-rg.yaml"); unique in a
// namespace because ASO groups differ in their first label.
func FileName(o *Object) string {
	g, _, _ := strings.Cut(o.Group, ".")
	return strings.ToLower(g+"-"+o.Kind) + "-" + o.Name + ".yaml"
}

// Uses returns every Secret and ConfigMap the tree's objects read, once
// each, sorted, with the fields that read it.
func (t *Tree) Uses() []Use {
	seen := map[string]*Use{}
	add := func(u Use, by string) {
		k := u.Kind + "/" + u.Namespace + "/" + u.Name
		if e, ok := seen[k]; ok {
			e.Field += ", " + by
			return
		}
		u.Field = by
		seen[k] = &u
	}
	for _, ns := range t.NamespaceCredentials {
		add(Use{Kind: "Secret", Namespace: ns, Name: aso.NamespaceCredentialSecret}, "the namespace's credential")
	}
	for _, o := range t.Objects {
		for _, u := range o.Uses {
			add(u, o.Kind+"/"+o.Name+" "+u.Field)
		}
	}
	out := make([]Use, 0, len(seen))
	for _, u := range seen {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out
}

// WriteTree writes the tree into dir (created; refused with ErrNotEmpty
// when it holds anything): one directory per namespace holding one file per
// object and a kustomization.yaml listing them, a kustomization.yaml at the
// top listing the namespaces (so that `kustomize build`, Flux and gitaso
// read the same objects), and the report. It writes into a directory
// beside dir and renames it into place, so an interruption leaves no
// half-written repository.
func WriteTree(dir string, t *Tree) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s: %w", dir, ErrNotEmpty)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeFiles(tmp, t); err != nil {
		return err
	}
	_ = os.Remove(dir) // an empty directory is taken over
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the repository into %s: %w", dir, err)
	}
	return nil
}

func writeFiles(root string, t *Tree) error {
	byNS := map[string][]*Object{}
	for _, o := range t.Objects {
		byNS[o.Namespace] = append(byNS[o.Namespace], o)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		objs := byNS[ns]
		sort.Slice(objs, func(i, j int) bool { return FileName(objs[i]) < FileName(objs[j]) })
		d := filepath.Join(root, ns)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		files := make([]string, 0, len(objs))
		for _, o := range objs {
			b, err := yaml.Marshal(o.Manifest)
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
			}
			f := FileName(o)
			if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
				return err
			}
			files = append(files, f)
		}
		if err := writeKustomization(d, files); err != nil {
			return err
		}
	}
	if err := writeKustomization(root, namespaces); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, ReportFile), []byte(report(t)), 0o644)
}

func writeKustomization(dir string, resources []string) error {
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b, 0o644)
}

// report is IMPORT.md: what was read, from where, and the Secrets and
// ConfigMaps the repository needs but does not hold.
func report(t *Tree) string {
	var b strings.Builder
	title := t.Title
	if title == "" {
		title = "Imported ASO objects"
	}
	b.WriteString("# " + title + "\n\n")
	if t.Header != "" {
		b.WriteString(t.Header + "\n\n")
	}
	if t.Title == "" {
		b.WriteString("Each manifest is the object as its author wrote it: no status, no server metadata, none of ASO's own\n" +
			"annotations or finalizer, no default ASO filled in. `source` says where the author's fields were read from:\n" +
			"`last-applied` (kubectl's annotation), `managed-fields` (fields set by field managers other than ASO's\n" +
			"controller), `object` (neither; the whole spec, less the defaults ASO's webhook writes).\n\n")
	}
	b.WriteString("| namespace | object | file | source | dropped |\n|---|---|---|---|---|\n")
	objs := append([]*Object(nil), t.Objects...)
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].Namespace != objs[j].Namespace {
			return objs[i].Namespace < objs[j].Namespace
		}
		return FileName(objs[i]) < FileName(objs[j])
	})
	for _, o := range objs {
		dropped := strings.Join(o.Dropped, ", ")
		if dropped == "" {
			dropped = "-"
		}
		fmt.Fprintf(&b, "| %s | %s/%s | %s/%s | %s | %s |\n", o.Namespace, o.Kind, o.Name, o.Namespace, FileName(o), o.Source, dropped)
	}
	uses := t.Uses()
	b.WriteString("\n## Secrets and ConfigMaps read, not copied\n\n")
	if len(uses) == 0 {
		b.WriteString("None.\n")
		return b.String()
	}
	b.WriteString("The objects read these from their namespace. Their values are not in this repository and never will be\n" +
		"written by an import: gitaso reads them from the cluster (`--kubeconfig`), from `--credentials-dir`, or from\n" +
		"files you add (encrypted with SOPS when they hold secrets).\n\n")
	b.WriteString("| kind | namespace/name | read by |\n|---|---|---|\n")
	for _, u := range uses {
		fmt.Fprintf(&b, "| %s | %s/%s | %s |\n", u.Kind, u.Namespace, u.Name, u.Field)
	}
	return b.String()
}
