package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Two symlink cases of issue 24: a directory of manifests replaced by a link leaving --dir's root (it was skipped
// and its resource groups deleted), and in Git mode a manifest moved elsewhere in the repository and linked back
// (skipped, deleted). gitaso now follows links inside the root in both modes and refuses a revision with a link
// leaving it, naming the link.

func init() {
	registerDataLoss(DataLossSpec{
		Name: "dir-symlink-out",
		What: "--dir: infra/team becomes a symlink to a directory outside the root",
		Want: "revision refused naming infra/team; nothing deleted",
		Run:  runDirSymlinkOut,
	})
	registerDataLoss(DataLossSpec{
		Name: "git-symlink-manifest",
		What: "Git: git mv infra/team.yaml shared/; ln -s ../shared/team.yaml infra/team.yaml",
		Want: "the link is followed: 0 changes; nothing deleted",
		Run:  runGitSymlinkManifest,
	})
}

// symlinkGroups is n resource groups named <prefix>-<i>.
func symlinkGroups(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: %s-%d\n  namespace: dataloss\nspec:\n  location: westeurope\n", prefix, i)
	}
	return b.String()
}

// writeTree writes files (slash path → content) below root.
func writeTree(root string, files map[string]string) error {
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// groupsLeft counts the resource groups named <prefix>-… that exist in the emulator.
func groupsLeft(ctx context.Context, env *Env, prefix string) (int, error) {
	inv, err := Inventory(ctx, env.Client, env.Sub, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range inv {
		if strings.EqualFold(r.Type, "Microsoft.Resources/resourceGroups") {
			n++
		}
	}
	return n, nil
}

// deletesSince counts the DELETE requests of resources named <prefix>… the emulator answered since its request log
// was last reset.
func deletesSince(env *Env, prefix string) int {
	n := 0
	for _, l := range env.Emu.RequestLog() {
		if l.Method == "DELETE" && strings.Contains(strings.ToLower(l.Path), "/resourcegroups/"+prefix) {
			n++
		}
	}
	return n
}

// gitasoApplyDir runs `gitaso apply --dir root` with the state file and cache under dir.
func (e *Env) gitasoApplyDir(ctx context.Context, root, dir string) (Proc, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Gitaso, "apply", "--dir", root, "--path", RepoPath,
		"--state", filepath.Join(dir, "gitaso.db"), "--cloud-config", e.CloudFile, "--log-level", "info")
	cmd.Env = e.gitasoEnv(filepath.Join(dir, "home"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out tailBuffer
	out.max = 16 << 10
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := Proc{Duration: time.Since(start), Output: out.String(), TimedOut: ctx.Err() != nil}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if err != nil {
		return r, fmt.Errorf("reliability: %s apply --dir: %w", e.Gitaso, err)
	}
	return r, nil
}

func runDirSymlinkOut(ctx context.Context, env *Env, dir string) DataLossCase {
	fail := func(err error) DataLossCase { return DataLossCase{Err: err} }
	root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	prefix := "dl-dirlink"
	team := map[string]string{"rgs.yaml": symlinkGroups(prefix+"-team", 2)}
	if err := writeTree(root, map[string]string{RepoPath + "/base.yaml": symlinkGroups(prefix+"-base", 3),
		RepoPath + "/team/rgs.yaml": team["rgs.yaml"]}); err != nil {
		return fail(err)
	}
	if err := writeTree(outside, team); err != nil {
		return fail(err)
	}
	p, err := env.gitasoApplyDir(ctx, root, dir)
	if err != nil {
		return fail(err)
	}
	if p.Exit != 0 {
		return fail(fmt.Errorf("first apply exited %d: %s", p.Exit, firstLine(p.Output)))
	}
	// infra/team becomes a symlink to the same manifests outside the root.
	teamDir := filepath.Join(root, RepoPath, "team")
	if err := os.RemoveAll(teamDir); err != nil {
		return fail(err)
	}
	if err := os.Symlink(outside, teamDir); err != nil {
		return fail(err)
	}
	env.Emu.ResetStats()
	if p, err = env.gitasoApplyDir(ctx, root, dir); err != nil {
		return fail(err)
	}
	left, err := groupsLeft(ctx, env, prefix)
	if err != nil {
		return fail(err)
	}
	deletes := deletesSince(env, prefix)
	named := strings.Contains(p.Output, RepoPath+"/team: symlink to")
	outcome := fmt.Sprintf("exit %d, %d deleted, %d/5 groups left", p.Exit, deletes, left)
	if p.Exit != 0 && named {
		outcome = fmt.Sprintf("refused naming %s/team (exit %d), %d deleted, %d/5 groups left", RepoPath, p.Exit, deletes, left)
	}
	return DataLossCase{Outcome: outcome, Held: p.Exit != 0 && named && deletes == 0 && left == 5,
		Detail: fmt.Sprintf("second apply %.1fs", p.Duration.Seconds())}
}

func runGitSymlinkManifest(ctx context.Context, env *Env, dir string) DataLossCase {
	fail := func(err error) DataLossCase { return DataLossCase{Err: err} }
	prefix := "dl-gitlink"
	repo, err := NewRepo(dir)
	if err != nil {
		return fail(err)
	}
	teamYAML := symlinkGroups(prefix+"-team", 2)
	if _, err := repo.Commit(map[string]string{RepoPath + "/base.yaml": symlinkGroups(prefix+"-base", 3),
		RepoPath + "/team.yaml": teamYAML}, "create"); err != nil {
		return fail(err)
	}
	p, err := env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, 2*time.Minute)
	if err != nil {
		return fail(err)
	}
	if p.Exit != 0 {
		return fail(fmt.Errorf("first apply exited %d: %s", p.Exit, firstLine(p.Output)))
	}
	// git mv infra/team.yaml shared/team.yaml; ln -s ../shared/team.yaml infra/team.yaml
	if _, err := repo.git(repo.Work, "mv", RepoPath+"/team.yaml", "shared-team.yaml"); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(filepath.Join(repo.Work, "shared"), 0o755); err != nil {
		return fail(err)
	}
	if _, err := repo.git(repo.Work, "mv", "shared-team.yaml", "shared/team.yaml"); err != nil {
		return fail(err)
	}
	if err := os.Symlink("../shared/team.yaml", filepath.Join(repo.Work, RepoPath, "team.yaml")); err != nil {
		return fail(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "team.yaml behind a symlink"}, {"push", "-q", "origin", "HEAD:refs/heads/main"}} {
		if _, err := repo.git(repo.Work, args...); err != nil {
			return fail(err)
		}
	}
	env.Emu.ResetStats()
	if p, err = env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, 2*time.Minute); err != nil {
		return fail(err)
	}
	left, err := groupsLeft(ctx, env, prefix)
	if err != nil {
		return fail(err)
	}
	deletes := deletesSince(env, prefix)
	writes := env.armWrites()
	return DataLossCase{
		Outcome: fmt.Sprintf("exit %d, %d writes, %d deleted, %d/5 groups left", p.Exit, writes, deletes, left),
		Held:    p.Exit == 0 && deletes == 0 && left == 5,
		Detail:  fmt.Sprintf("second apply %.1fs", p.Duration.Seconds()),
	}
}
