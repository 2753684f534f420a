package anchor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Main is the aso-anchor command: flags (defaults from ASO_CONTROLLER, ASO_CRDS, GITASO_KUBE_ASSETS and
// GITASO_SHARED), then Run for each workload, results under -out and as markdown on stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cache, _ := os.UserCacheDir()
	fs := flag.NewFlagSet("aso-anchor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Controller, "aso-controller", os.Getenv("ASO_CONTROLLER"), "ASO's controller binary (default $ASO_CONTROLLER)")
	fs.StringVar(&o.CRDs, "aso-crds", os.Getenv("ASO_CRDS"), "directory of ASO's CRDs and webhook configurations (default $ASO_CRDS)")
	fs.StringVar(&o.KubeAssets, "kube-assets", envOr("GITASO_KUBE_ASSETS", filepath.Join(cache, "gitaso", "kube-v1.36.3")), "directory with kube-apiserver and etcd (scripts/kube-binaries.sh)")
	fs.StringVar(&o.Gitaso, "gitaso", "bin/gitaso", "gitaso binary")
	fs.StringVar(&o.Out, "out", "aso-anchor-out", "directory for logs, write logs and result.json per workload")
	fs.IntVar(&o.Parallelism, "parallelism", 16, "objects applied to the cluster at once (server-side apply), and gitaso --parallelism")
	fs.DurationVar(&o.Latency, "latency", 0, "emulator LRO duration, both sides")
	fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "wait for Ready at most this long per side")
	fs.DurationVar(&o.IdlePeriod, "idle-period", 0, "sync period of both sides; when set, count the ARM requests of one period after Ready")
	fs.BoolVar(&o.Restart, "restart", false, "restart each side's controller after Ready and count the requests until ARM is quiet")
	fs.StringVar(&o.Sides, "sides", "", "aso or gitaso to run one side only (default both)")
	shared := fs.String("shared", envOr("GITASO_SHARED", "../shared"), "the shared directory (conformance/aso)")
	examples := fs.String("examples", "examples", "gitaso's examples directory (onboarding)")
	workloads := fs.String("workloads", "conformance,onboarding", "comma-separated: conformance, onboarding, tree (1,000 resources), tree-N, minimal (every kind of -minimal-dir)")
	minimal := fs.String("minimal-dir", "", "directory of minimal manifests, one or more per kind (workload minimal)")
	md := fs.String("markdown", "", "also write the markdown tables to this file")
	handover := fs.Bool("handover", false, "run the hand-over instead (one emulator and one cluster: ASO, then gitaso import, handover, a change, export, ASO again; workload onboarding unless -workloads says otherwise)")
	fs.BoolVar(&o.HandoverStale, "handover-stale", false, "with -handover: leave ASO's object with its old spec while gitaso changes the resource (what the way back then does)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *handover {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "workloads" })
		if !set {
			*workloads = "onboarding"
		}
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime's logger
	if o.Sides != "gitaso" {
		if err := o.Check(); err != nil {
			return err
		}
	}
	var ws []Workload
	for _, w := range strings.Split(*workloads, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "conformance":
			ws = append(ws, Conformance(*shared))
		case w == "onboarding":
			ws = append(ws, Onboarding(*examples))
		case w == "tree":
			ws = append(ws, Tree(1000))
		case strings.HasPrefix(w, "tree-"):
			var n int
			if _, err := fmt.Sscanf(w, "tree-%d", &n); err != nil || n < 1 {
				return fmt.Errorf("anchor: workload %q: want tree-N", w)
			}
			ws = append(ws, Tree(n))
		case w == "minimal":
			if *minimal == "" {
				return errors.New("anchor: workload minimal needs -minimal-dir")
			}
			ws = append(ws, Dir("minimal", *minimal, "one minimal valid manifest per kind"))
		case w == "":
		default:
			return fmt.Errorf("anchor: unknown workload %q", w)
		}
	}
	if *handover {
		return mainHandover(ctx, o, ws, stdout, *md)
	}
	var results []*Result
	var errs []error
	for _, w := range ws {
		o.Workload = w
		o.Logger.Info("workload", "name", w.Name)
		r, err := Run(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.Name, err))
		}
		if r != nil {
			results = append(results, r)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := WriteMarkdown(stdout, results); err != nil {
		return err
	}
	if *md != "" {
		f, err := os.Create(*md)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		err = WriteMarkdown(f, results)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// Dir is a workload of the manifests in a directory, copied as they are.
func Dir(name, dir, note string) Workload {
	return Workload{Name: name, Note: note, Write: func(out string) error { return copyDir(dir, out) }}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// mainHandover runs the hand-over of each workload and writes its markdown.
func mainHandover(ctx context.Context, o Options, ws []Workload, stdout io.Writer, md string) error {
	var errs []error
	var results []*HandoverResult
	for _, w := range ws {
		o.Workload = w
		o.Logger.Info("hand-over", "workload", w.Name)
		r, err := RunHandover(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.Name, err))
		}
		if r != nil {
			results = append(results, r)
			if !r.OK() {
				errs = append(errs, fmt.Errorf("%s: the hand-over's checks failed (see the markdown)", w.Name))
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	var b strings.Builder
	for _, r := range results {
		WriteHandoverMarkdown(&b, r)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if md != "" {
		if err := os.WriteFile(md, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
	}
	return errors.Join(errs...)
}
