// Command aso-anchor runs ASO v2 manifests through Azure Service Operator's own controller and through gitaso,
// side by side against two fresh ARM emulators, and reports speed and fidelity (package harness/anchor,
// docs/aso-anchor.md). It reuses an ASO controller binary and CRDs built by hand outside this repository.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gitaso/gitaso/harness/anchor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := anchor.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "aso-anchor:", err)
		os.Exit(1)
	}
}
