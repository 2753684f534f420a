package source

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
)

// group is a resource group named name in team-a.
func group(name string) string {
	return fmt.Sprintf("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: %s\n  namespace: team-a\nspec:\n  location: westeurope\n", name)
}

// TestSymlinksReadAlike reads one tree with symlinks from disk (--dir) and
// from a commit of it (Git): both follow the links that stay inside the
// root, under the link's name, and refuse the revision naming each link
// that leaves it, dangles or loops, rather than skip it (a skipped link's
// objects would look deleted, and the reconciler would delete them).
func TestSymlinksReadAlike(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed")
	}
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"team/secret.yaml": secretYAML, "x.yaml": group("outside")})
	for _, tc := range []struct {
		name  string
		files map[string]string // path → content
		links map[string]string // link → target ("@" is the outside directory, "^" the same as a relative path)
		path  string
		want  []string // objects; nil when refused
		// refused maps each entry named by an error to a word both modes use.
		refused map[string]string
	}{{
		// git mv infra/team.yaml shared/team.yaml; ln -s ../shared/team.yaml infra/team.yaml
		name:  "file moved behind a link",
		files: map[string]string{"infra/rg.yaml": group("rg"), "shared/team.yaml": group("team")},
		links: map[string]string{"infra/team.yaml": "../shared/team.yaml"},
		path:  "infra",
		want:  []string{"infra/rg.yaml:1 team-a/ResourceGroup/rg", "infra/team.yaml:1 team-a/ResourceGroup/team"},
	}, {
		name:  "directory moved behind a link",
		files: map[string]string{"infra/rg.yaml": group("rg"), "shared/team/a.yaml": group("a"), "shared/team/sub/b.yaml": group("b")},
		links: map[string]string{"infra/team": "../shared/team"},
		path:  "infra",
		want: []string{"infra/rg.yaml:1 team-a/ResourceGroup/rg", "infra/team/a.yaml:1 team-a/ResourceGroup/a",
			"infra/team/sub/b.yaml:1 team-a/ResourceGroup/b"},
	}, {
		name:  "chain of links, directory named like a manifest",
		files: map[string]string{"shared/team/a.yaml": group("a")},
		links: map[string]string{"infra/one": "two", "infra/two": "../shared", "infra/dir.yaml": "one/team"},
		path:  "infra",
		// The same object three times (infra/dir.yaml/a.yaml first): refused
		// as defined twice, not skipped.
		refused: map[string]string{"infra/one/team/a.yaml": "defined twice", "infra/two/team/a.yaml": "defined twice"},
	}, {
		name:  "the source path is a link",
		files: map[string]string{"clusters/prod/rg.yaml": group("rg")},
		links: map[string]string{"live": "clusters/prod"},
		path:  "live",
		want:  []string{"live/rg.yaml:1 team-a/ResourceGroup/rg"},
	}, {
		name:    "directory link leaving the root (absolute)",
		files:   map[string]string{"infra/rg.yaml": group("rg")},
		links:   map[string]string{"infra/team": "@/team"},
		path:    "infra",
		refused: map[string]string{"infra/team": "leads outside"},
	}, {
		name:    "directory link leaving the root (relative)",
		files:   map[string]string{"infra/rg.yaml": group("rg")},
		links:   map[string]string{"infra/team": "^/team"},
		path:    "infra",
		refused: map[string]string{"infra/team": "leads outside"},
	}, {
		name:    "file link leaving the root",
		files:   map[string]string{"infra/rg.yaml": group("rg")},
		links:   map[string]string{"infra/x.yaml": "@/x.yaml", "infra/zero.yaml": "/dev/zero"},
		path:    "infra",
		refused: map[string]string{"infra/x.yaml": "leads outside", "infra/zero.yaml": "leads outside"},
	}, {
		name:    "dangling links, whatever their names",
		files:   map[string]string{"infra/rg.yaml": group("rg")},
		links:   map[string]string{"infra/team": "../shared/team", "infra/gone.yaml": "gone/x.yaml"},
		path:    "infra",
		refused: map[string]string{"infra/team": "cannot be resolved", "infra/gone.yaml": "cannot be resolved"},
	}, {
		name:    "a loop",
		files:   map[string]string{"infra/rg.yaml": group("rg")},
		links:   map[string]string{"infra/again": "..", "infra/self": "self"},
		path:    "infra",
		refused: map[string]string{"infra/again": "loop", "infra/self": "cannot be resolved"},
	}, {
		name:  "hidden links and links to other files are not read",
		files: map[string]string{"infra/rg.yaml": group("rg"), "README.md": "# hi\n"},
		links: map[string]string{"infra/.cache": "@", "infra/README.md": "../README.md"},
		path:  "infra",
		want:  []string{"infra/rg.yaml:1 team-a/ResourceGroup/rg"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			writeFiles(t, work, tc.files)
			for l, target := range tc.links {
				full := filepath.Join(work, filepath.FromSlash(l))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				rel, err := filepath.Rel(filepath.Dir(full), outside)
				if err != nil {
					t.Fatal(err)
				}
				target = strings.NewReplacer("@", outside, "^", rel).Replace(target)
				if err := os.Symlink(target, full); err != nil {
					t.Fatal(err)
				}
			}
			commitAll(t, work)
			g, err := NewGit(GitOptions{URL: work, Branch: "main", Path: tc.path, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			for mode, fetch := range map[string]func() (*manifest.Snapshot, error){
				"dir": func() (*manifest.Snapshot, error) { return NewDir(work, tc.path).Fetch(t.Context()) },
				"git": func() (*manifest.Snapshot, error) { return g.Fetch(t.Context()) },
			} {
				snap, err := fetch()
				if tc.refused == nil {
					if err != nil {
						t.Fatalf("%s: %v", mode, err)
					}
					if diff := cmp.Diff(tc.want, ids(snap.Objects)); diff != "" {
						t.Errorf("%s: objects (-want +got):\n%s", mode, diff)
					}
					continue
				}
				var rerr *RevisionError
				if !errors.As(err, &rerr) {
					t.Fatalf("%s: want the revision refused, got %v", mode, err)
				}
				got := map[string]string{}
				for _, e := range rerr.Errors {
					got[e.File] = e.Error()
				}
				for file, word := range tc.refused {
					if !strings.Contains(got[file], word) {
						t.Errorf("%s: %s: got %q, want %q", mode, file, got[file], word)
					}
				}
				if len(got) != len(tc.refused) {
					t.Errorf("%s: errors %v, want one for each of %v", mode, got, tc.refused)
				}
				if strings.Contains(err.Error(), "aHVudGVyMg") {
					t.Errorf("%s: something outside the root was read: %v", mode, err)
				}
			}
		})
	}
}

// commitAll commits the work tree dir on branch main of a repository made
// there.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "links"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
