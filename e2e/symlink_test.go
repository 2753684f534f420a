package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// TestSymlinksDeleteNothing: a manifest and a directory moved behind
// symlinks inside the repository are read through them (Git mode and
// --dir alike), and a directory link leaving the repository refuses the
// revision naming it; in no case is a resource deleted. Before, Git mode
// skipped every symlink and --dir every directory link: the next run
// deleted their resource groups.
func TestSymlinksDeleteNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, mode := range []string{"git", "dir"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnvWith(t, envOptions{dir: mode == "dir"})
			e.commit("create", map[string]string{
				"base.yaml":        groups("base", 4),
				"team.yaml":        groups("team", 2),
				"teamdir/rgs.yaml": groups("dir", 2),
			})
			e.runSucceeds(t, "create")
			noDeletes := func(what string) {
				t.Helper()
				for _, w := range e.writes() {
					t.Errorf("%s: wrote %s", what, w)
				}
				if rs, _ := e.db.Resources(record.Filter{}); len(rs) != 8 {
					t.Errorf("%s: state holds %d resources, want 8", what, len(rs))
				}
			}

			// git mv clusters/snd/team.yaml shared/team.yaml; ln -s ../../shared/team.yaml clusters/snd/team.yaml;
			// the same for the directory clusters/snd/teamdir.
			e.emu.ResetStats()
			e.repo.Link("clusters/snd/team.yaml", "../../shared/team.yaml")
			e.repo.Link("clusters/snd/teamdir", "../../shared/teamdir")
			e.repo.Commit(map[string]string{"shared/team.yaml": groups("team", 2), "shared/teamdir/rgs.yaml": groups("dir", 2)},
				nil, "move behind links")
			rep := e.runSucceeds(t, "moved behind links")
			if rep.Plan.HasChanges() {
				var b strings.Builder
				_ = planner.RenderText(&b, rep.Plan, planner.TextOptions{})
				t.Errorf("moving manifests behind links planned changes:\n%s", b.String())
			}
			noDeletes("moved behind links")

			// The directory link now leaves the repository.
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "rgs.yaml"), []byte(groups("dir", 2)), 0o644); err != nil {
				t.Fatal(err)
			}
			e.repo.Link("clusters/snd/teamdir", outside)
			e.repo.Commit(nil, nil, "link out of the repository")
			rep, err := e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true})
			if !errors.Is(err, reconcile.ErrRefused) || rep.Run.Outcome != record.OutcomeRefused ||
				!strings.Contains(rep.Run.Error, "clusters/snd/teamdir: symlink to "+outside+" leads outside") {
				t.Errorf("link out of the repository: %v, outcome %s %q, want refused naming clusters/snd/teamdir", err, rep.Run.Outcome, rep.Run.Error)
			}
			noDeletes("link out of the repository")

			// Back inside: read again, nothing to do.
			e.repo.Link("clusters/snd/teamdir", "../../shared/teamdir")
			e.repo.Commit(nil, nil, "link back")
			if rep = e.runSucceeds(t, "link back"); rep.Plan.HasChanges() {
				t.Error("the link back planned changes")
			}
			noDeletes("link back")
		})
	}
}
