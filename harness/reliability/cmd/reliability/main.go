// Command reliability runs gitaso's reliability harness (make reliability): kill -9 trials, a fault soak and a
// hostile-input corpus against a built gitaso binary. See docs/reliability.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gitaso/gitaso/harness/reliability"
)

func main() {
	reliability.MaybeMeasure() // the harness starts `gitaso validate` through itself to measure its RSS alone
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if errors.Is(err, reliability.ErrFindings) {
			fmt.Fprintln(os.Stderr, "reliability:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	o := reliability.DefaultOptions()
	fs := flag.NewFlagSet("reliability", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if exe, err := os.Executable(); err == nil {
		o.Hostile.Launcher = exe
	}
	return reliability.Run(ctx, o, os.Stdout)
}
