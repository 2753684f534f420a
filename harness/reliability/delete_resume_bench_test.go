package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkDeleteResume measures issue 24's probe item 10: 900 user-assigned identities, each with a federated
// credential, are removed from Git and `gitaso apply` is SIGKILLed every 13 s under ARM's throttling, then run to
// the end. It reports the ARM requests each run sent before its first DELETE and how many identities the killed
// runs deleted. GITASO_RESUME_IDENTITIES, GITASO_RESUME_KILLS and GITASO_RESUME_EVERY change the sizes.
//
//	make build && go test -tags kustomize_disable_go_plugin_support ./harness/reliability/ -run '^$' \
//	    -bench BenchmarkDeleteResume -benchtime 1x -v
func BenchmarkDeleteResume(b *testing.B) {
	bin, err := filepath.Abs("../../bin/gitaso")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("no gitaso binary (make build): %v", err)
	}
	opts := DefaultDeleteResumeOptions()
	opts.Identities = envInt(b, "GITASO_RESUME_IDENTITIES", opts.Identities)
	opts.Kills = envInt(b, "GITASO_RESUME_KILLS", opts.Kills)
	if v := os.Getenv("GITASO_RESUME_EVERY"); v != "" {
		if opts.KillEvery, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	if v := os.Getenv("GITASO_RESUME_ARGS"); v != "" {
		opts.ExtraArgs = strings.Fields(v)
	}
	if testing.Verbose() {
		opts.Progress = os.Stdout
		opts.Verbose = os.Getenv("GITASO_RESUME_VERBOSE") != ""
	}
	for b.Loop() {
		env, err := NewEnv(EnvOptions{Dir: filepath.Join(b.TempDir(), "env"), Gitaso: bin, LROLatency: 300 * time.Millisecond, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		res, err := RunDeleteResume(context.Background(), env, opts)
		_ = env.Close()
		if err != nil {
			b.Fatal(err)
		}
		fmt.Println(res.String())
		if !res.Converged {
			b.Errorf("the delete did not finish: %d identities left", res.Left)
		}
		b.ReportMetric(float64(res.FirstRestartBeforeDelete), "req-before-delete-after-restart")
		b.ReportMetric(float64(res.DeletedUnderKills), "identities-deleted-under-kills")
		b.ReportMetric(float64(res.Listings), "child-listings")
		b.ReportMetric(float64(res.Runs), "runs")
	}
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return n
}
