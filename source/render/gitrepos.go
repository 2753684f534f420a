package render

import (
	"context"
	"fmt"
	"path"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// GitSource is another Git repository a Flux Kustomization's sourceRef
// names: the GitRepository object and the credentials of its secretRef.
type GitSource struct {
	Namespace, Name string // the GitRepository object
	URL             string
	Branch          string            // spec.ref.branch ("master" when no ref is given, as Flux)
	Secret          map[string]string // spec.secretRef's data (username/password, bearerToken, ca.crt); nil when none
}

// GitFetcher reads another Git repository at the head of a branch: its
// commit and its files. *source.Repositories is one (see Repositories).
type GitFetcher func(ctx context.Context, src GitSource) (revision string, files []source.File, err error)

// Repositories adapts source.Repositories to a GitFetcher: basic auth from
// username/password (a bearerToken is sent as the password), ca.crt
// trusted.
func Repositories(rs *source.Repositories) GitFetcher {
	return func(ctx context.Context, src GitSource) (string, []source.File, error) {
		req := source.RepositoryRequest{URL: src.URL, Branch: src.Branch,
			Username: src.Secret["username"], Password: src.Secret["password"], CABundle: []byte(src.Secret["ca.crt"])}
		if t := src.Secret["bearerToken"]; t != "" && req.Password == "" {
			req.Username, req.Password = "git", t
		}
		if source.IsSSHURL(src.URL) {
			// As source-controller reads an SSH GitRepository's secretRef:
			// identity, password (the key's passphrase), known_hosts.
			req.Username, req.Password = "", ""
			req.SSH = &source.SSHKey{Identity: []byte(src.Secret["identity"]), Passphrase: src.Secret["password"], KnownHosts: src.Secret["known_hosts"]}
		}
		return rs.Files(ctx, req)
	}
}

// mountPrefix is where another repository's files appear in the tree a
// walk renders: errors and origins name ".gitaso/git/<ns>/<name>/<path>".
func mountPrefix(id string) string { return ".gitaso/git/" + id }

// mount reads the GitRepository k's sourceRef names (another repository
// than gitaso's) and adds its files to the walk's tree under mountPrefix,
// once per walk. The commit read is an external source of the revision, so
// a new commit there is a new revision here.
func (w *fluxWalk) mount(ctx context.Context, k *fluxKustomization) (string, error) {
	id := k.sourceRefID()
	prefix := mountPrefix(id)
	if w.mounted[id] {
		return prefix, nil
	}
	if w.r.opts.Repositories == nil {
		return "", fmt.Errorf("it is another repository than the one gitaso reads, and reading other repositories is off")
	}
	x := newObjectIndex()
	for _, c := range w.raw {
		x.addCandidate(c)
	}
	for _, c := range w.built {
		x.addCandidate(c)
	}
	ns, name := splitID(id)
	obj, ok := x.get("GitRepository", ns, name)
	if !ok {
		return "", fmt.Errorf("GitRepository %s is not declared in the repository", id)
	}
	spec := obj.Spec()
	src := GitSource{Namespace: ns, Name: name, URL: str(spec["url"]), Branch: "master"}
	if ref, ok := spec["ref"].(map[string]any); ok {
		for _, f := range []string{"tag", "semver", "commit", "name"} {
			if str(ref[f]) != "" {
				return "", fmt.Errorf("GitRepository %s: spec.ref.%s: gitaso follows a branch of another repository (spec.ref.branch)", id, f)
			}
		}
		if b := str(ref["branch"]); b != "" {
			src.Branch = b
		}
	}
	if sr, ok := spec["secretRef"].(map[string]any); ok && str(sr["name"]) != "" {
		so, ok := x.get("Secret", ns, str(sr["name"]))
		if !ok {
			return "", fmt.Errorf("GitRepository %s: spec.secretRef: Secret %s/%s is not in the repository", id, ns, str(sr["name"]))
		}
		data, err := manifest.SecretData(so)
		if err != nil {
			return "", fmt.Errorf("GitRepository %s: spec.secretRef: %w", id, err)
		}
		src.Secret = data
	}
	rev, files, err := w.r.opts.Repositories(ctx, src)
	if err != nil {
		return "", fmt.Errorf("GitRepository %s (%s, branch %s): %w", id, src.URL, src.Branch, err)
	}
	mounted := make([]source.File, len(files))
	for i, f := range files {
		p := path.Join(prefix, f.Path)
		mounted[i] = source.File{Path: p, Data: f.Data}
		w.byPath[p] = f.Data
	}
	t := newTree(mounted)
	for p := range t.files {
		w.t.files[p] = true
	}
	for d := range t.dirs {
		w.t.dirs[d] = true
	}
	for d, kf := range t.kfiles {
		w.t.kfiles[d] = kf
	}
	if w.mounted == nil {
		w.mounted = map[string]bool{}
	}
	w.mounted[id] = true
	w.report(manifest.External{Kind: "GitRepository", User: id, Name: src.URL, Version: src.Branch, Digest: rev})
	return prefix, nil
}

func splitID(id string) (ns, name string) {
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
