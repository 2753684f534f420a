// Package reliability is gitaso's reliability harness (make reliability, docs/reliability.md). It drives a built
// gitaso binary as a subprocess against the in-process ARM emulator (which outlives every gitaso it kills) and
// file:// Git repositories, and checks what Azure and the state file hold afterwards:
//
//   - kill -9 trials (RunKillTrials): a fleet of resource groups, identities, role assignments, a Service Bus
//     namespace and queues goes through a create, update, delete or move while `gitaso apply` is SIGKILLed at a
//     random moment; gitaso then runs again until the fleet converges;
//   - a fault soak (RunSoak): create/update/move/delete cycles while a share of ARM requests is answered 429, 500 or
//     503 or has its connection reset, before or after the request was served;
//   - a hostile-input corpus (RunHostile): `gitaso validate` on alias bombs, a huge file, 100,000 objects, deep
//     nesting, symlinks out of the root and to /dev/zero, a FIFO and binary data, kustomizations past the
//     per-revision limits and hostile Helm chart templates (HostileChart), with a timeout and a memory guard.
//
// The checks (Inventory, ReadState, Evaluate) are the proof: converged (every declared resource in Azure with the
// fields its manifest sets, Ready in state, nothing else), orphaned (in Azure, undeclared, forgotten by state),
// duplicated (two Azure resources for one manifest), lost (a resource declared before and after the run deleted
// from Azure, or deleted and created again: the request log and the resource's creation fingerprint both tell)
// and corrupted (the state file fails bbolt's check, does not open, or holds a record that does not decode).
//
// A check on its own:
//
//	inv, _ := reliability.Inventory(ctx, env.Client, env.Sub, "rel-t07")
//	st, err := reliability.ReadState("gitaso.db") // errors.Is(err, reliability.ErrCorrupted)
//	v := reliability.Evaluate(reliability.Expectation{Declared: fleet.Decls(), Baseline: before}, inv, st, env.Emu.RequestLog())
//	fmt.Println(v.Converged(), v.Lost, v.Orphaned, v.Duplicated)
package reliability
