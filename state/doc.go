// Package state is gitaso's memory between runs: one bbolt file holding, per
// ASO resource, its ARM ID, the hash and redacted body of what was last
// applied, its Ready condition in ASO's shape and its exported outputs; the
// history of runs; the latest plan and the last good revision; in-flight ARM
// operations (so a crash mid-apply can resume polling); and the values
// resources export through operatorSpec.configMaps and operatorSpec.secrets.
//
// # Layout
//
// Buckets and keys (schema version 1, stored in meta/schemaVersion):
//
//	resources      namespace/group/Kind/name   → Resource (JSON)
//	runs           big-endian uint64 sequence  → Run (JSON); at most WithMaxRuns (default 500), oldest pruned
//	meta           schemaVersion, lastGoodRevision, latestRevision, plan, runCounts, secretKeyCheck, refused, rebuilt (RebuiltMark: set by Rebuild, cleared by the first run that records every resource)
//	operations     key (the resource key)      → Operation (JSON)
//	exports        namespace/configMapName     → map[key]value (JSON, plain: not secret)
//	secretExports  namespace/secretName        → {keys, sealed} (values AES-256-GCM encrypted)
//	runResources   big-endian run ID           → []Touched (JSON): what the run changed or failed on; pruned with runs
//	resourceRuns   key, 0x00, run ID           → ResourceRun (JSON): a resource's newest MaxResourceRuns runs
//	changes        key (the resource key)      → Change (JSON): the redacted body before its last change
//	units          unit ID (Kind/ns/name)      → record.Unit (JSON): a Flux Kustomization or HelmRelease (units.go)
//	unitObjects    unit ID                     → the unit's objects as last applied, sealed like secret exports
//	approvals      revision                    → Approval (JSON)
//	audit          big-endian uint64 sequence  → AuditEvent (JSON): the audit trail (audit.go), pruned by PruneAudit
//
// The last five are created on first write (touched.go, units.go), so a file
// without them reads as empty; a run writes its list once, never rewriting
// resource records for it.
//
// A file with a newer schema version is refused (ErrNewerSchema); an older one
// is migrated inside the opening transaction.
//
// # Transactions
//
// Update runs one bbolt read-write transaction: everything the function writes
// is committed with one fsync, or nothing is if it returns an error. Write one
// reconcile's results in one Update; per-key transactions are about 100 times
// slower. BenchmarkUpdate10k (10,000 resources of ~670 B in one Update) takes
// about 0.3 s on a 2-core machine, BenchmarkResources10k (read and decode all
// of them) about 0.1 s.
// Committed data survives a crash: bbolt's copy-on-write pages and meta-page
// switch make a commit atomic, and a process that dies mid-transaction leaves
// the file as of the previous commit.
//
// Only one process can open the file: Open waits WithLockTimeout (default 1s)
// for the file lock and then fails with ErrLocked, naming the path.
//
// # Damage
//
// Open checks an existing file before bbolt maps it (Check, verify.go: the
// file read with bounded offsets, so no byte of it can panic gitaso): meta
// pages, length, freelist and every bucket's pages. A damaged file, a
// zero-length one included, fails with a *DamagedError (errors.Is(err,
// ErrDamaged)) naming the pages and buckets and the ways out (WaysOut); only
// a missing file is a new state. One damaged meta page is not damage (bbolt
// uses the other; CheckReport says so). A page damaged after Open makes the
// read that meets it return a *DamagedError: every transaction recovers
// bbolt's panics and, with debug.SetPanicOnFault, faults on the mapping
// (damaged.go); Damaged returns the first one for /readyz. Rebuild moves a
// damaged file aside (copying every record when only the freelist is
// damaged). docs/state.md is the operator's side.
//
// # Secret exports
//
// Decision: values exported into Secrets (listKeys results, connection
// strings) are kept in state, encrypted at rest, rather than kept out of it,
// because other resources' SecretReference fields must resolve them on every
// run, including after a restart, without calling listKeys again. They are
// sealed with AES-256-GCM, one random nonce per record and the record key
// (namespace/secretName) as additional data, so a ciphertext cannot be moved
// to another secret. The key is, in order of preference:
//
//   - supplied by the caller with WithEncryptionKey (32 bytes, e.g. from a
//     KMS or a mounted secret), or
//   - read from a key file next to the database (path + ".key", or
//     WithKeyFile), 32 random bytes in base64, created atomically with mode
//     0600 on first use. A key file readable by group or others is refused.
//
// Back up the key file separately from the database: the database alone does
// not reveal secrets, and without the key secret exports cannot be read (they
// are re-exported by the next apply of the exporting resource). A key check
// value sealed into meta makes a wrong key fail at Open with ErrKeyMismatch.
// Key names of secret exports stay in clear so the API can list them; values
// are never returned by anything but SecretExports.
//
// # Conditions
//
// Condition has ASO's shape, and MergeCondition / Condition.ShouldOverwrite
// implement ASO's overwrite rules: a newer observedGeneration wins; at the
// same generation True/Warning/Error beat Info, Info beats Unknown, and
// Reconciling replaces the WaitingForOwner/…NotFound warnings;
// lastTransitionTime changes only when the status changes.
//
// # Example
//
//	db, err := state.Open(filepath.Join(dir, "gitaso.db"))
//	if err != nil {
//		return err // errors.Is(err, state.ErrLocked) when gitaso serve holds it
//	}
//	defer db.Close()
//	run := &state.Run{Revision: rev, Trigger: "interval", StartedAt: time.Now()}
//	err = db.Update(func(w *state.Writer) error {
//		for _, r := range applied {
//			if err := w.PutResource(r); err != nil {
//				return err
//			}
//		}
//		run.FinishedAt, run.Outcome = time.Now(), state.OutcomeSucceeded
//		if err := w.PutRun(run); err != nil {
//			return err
//		}
//		return w.SetLastGoodRevision(rev)
//	})
//	notReady, err := db.Resources(state.Filter{Namespace: "team-a", Ready: "False"})
package state
