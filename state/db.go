package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this package writes. A database written
// by a newer gitaso (a larger version) is refused with ErrNewerSchema.
const SchemaVersion uint64 = 1

// DefaultMaxRuns is how many runs are kept when WithMaxRuns is not given.
const DefaultMaxRuns = 500

// DefaultLockTimeout is how long Open waits for another process to release
// the database file when WithLockTimeout is not given.
const DefaultLockTimeout = time.Second

var (
	// ErrLocked is returned by Open when another process (another gitaso)
	// holds the database file open for writing and did not release it within
	// the lock timeout.
	ErrLocked = errors.New("state database is locked by another gitaso process")

	// ErrNewerSchema is returned by Open when the file was written by a newer
	// gitaso whose schema version this build does not understand.
	ErrNewerSchema = errors.New("state database was written by a newer gitaso")

	// ErrKeyMismatch is returned when secret exports were sealed with a
	// different encryption key than the one configured now.
	ErrKeyMismatch = errors.New("state encryption key does not match the key that sealed the stored secrets")

	// ErrNoKey is returned when a secret export is read or written but the
	// database was opened WithoutKeyFile and no key was supplied.
	ErrNoKey = errors.New("state has no encryption key for secret exports")
)

var (
	bucketResources  = []byte("resources")
	bucketRuns       = []byte("runs")
	bucketMeta       = []byte("meta")
	bucketOperations = []byte("operations")
	bucketExports    = []byte("exports")
	bucketSecrets    = []byte("secretExports")
	bucketApprovals  = []byte("approvals")
	bucketAudit      = []byte("audit")

	allBuckets = [][]byte{bucketResources, bucketRuns, bucketMeta, bucketOperations, bucketExports, bucketSecrets, bucketApprovals, bucketAudit}

	metaSchema           = []byte("schemaVersion")
	metaLastGoodRevision = []byte("lastGoodRevision")
	metaLatestRevision   = []byte("latestRevision")
	metaPlan             = []byte("plan")
	metaRunCounts        = []byte("runCounts")
	metaKeyCheck         = []byte("secretKeyCheck")
)

// DB is gitaso's state store: one bbolt file. It is safe for concurrent use by
// many goroutines; only one process can hold it open at a time.
type DB struct {
	bolt *bolt.DB
	path string
	opts options

	keyMu sync.Mutex
	key   []byte // AES-256 key for secret exports, loaded or created on first use

	ready readyIndex // Ready status per resource, for ReadyCounts (ready.go)

	resVersion atomic.Uint64 // ResourcesVersion (walk.go)

	checked *Report                      // the check at Open (check.go); nil for a new file
	damaged atomic.Pointer[DamagedError] // the first damage a read found (damaged.go)
}

type options struct {
	maxRuns     int
	lockTimeout time.Duration
	key         []byte
	keyFile     string
	noKeyFile   bool
}

// Option configures Open.
type Option func(*options)

// WithMaxRuns keeps at most n runs; older runs are pruned when a run is
// written. n <= 0 selects DefaultMaxRuns.
func WithMaxRuns(n int) Option { return func(o *options) { o.maxRuns = n } }

// WithLockTimeout sets how long Open waits for the file lock held by another
// process before failing with ErrLocked.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithEncryptionKey supplies the 32-byte AES-256 key that seals secret exports,
// instead of the key file next to the database. The slice is copied.
func WithEncryptionKey(key []byte) Option {
	return func(o *options) { o.key = append([]byte(nil), key...) }
}

// WithKeyFile sets the key file path (default: the database path + ".key").
// The file is created with mode 0600 on first use when it does not exist.
func WithKeyFile(path string) Option { return func(o *options) { o.keyFile = path } }

// WithoutKeyFile disables the key file: without WithEncryptionKey, secret
// exports then fail with ErrNoKey.
func WithoutKeyFile() Option { return func(o *options) { o.noKeyFile = true } }

// Open opens (creating if needed) the state database at path. A second process
// opening the same file waits for the lock timeout and then fails with
// ErrLocked; a file written by a newer schema fails with ErrNewerSchema.
//
// An existing file is checked first (Check): a damaged one, a zero-length
// one included, fails with a *DamagedError (errors.Is(err, ErrDamaged))
// naming the damage and the ways out; only a missing file is a new state.
// One damaged meta page is not damage (bbolt uses the other): CheckReport's
// MetaFallback says so.
func Open(path string, opts ...Option) (*DB, error) {
	o := options{maxRuns: DefaultMaxRuns, lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxRuns <= 0 {
		o.maxRuns = DefaultMaxRuns
	}
	if o.lockTimeout <= 0 {
		o.lockTimeout = DefaultLockTimeout
	}
	if o.key != nil && len(o.key) != keySize {
		return nil, fmt.Errorf("state: encryption key must be %d bytes, got %d", keySize, len(o.key))
	}
	if o.keyFile == "" {
		o.keyFile = path + ".key"
	}
	checked, err := checkExisting(path, o.lockTimeout)
	if errors.Is(err, ErrDamaged) {
		return nil, err // it names the file
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, lockHint(err, o.lockTimeout))
	}
	bdb, err := openBolt(path, &bolt.Options{
		Timeout:      o.lockTimeout,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("state: open %s: %w (waited %s; is `gitaso serve` running?)", path, ErrLocked, o.lockTimeout)
		}
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	db := &DB{bolt: bdb, path: path, opts: o, checked: checked}
	if err := db.init(); err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	if err := db.checkKey(); err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("state: open %s: secret exports: %w", path, err)
	}
	return db, nil
}

// openBolt is bolt.Open with its panics (a damage the check let through)
// turned into a *DamagedError. The file stays open and locked then: bbolt
// gives no way to close what it opened before panicking.
func openBolt(path string, o *bolt.Options) (bdb *bolt.DB, err error) {
	defer func() {
		if v := recover(); v != nil {
			where, _ := panicSite()
			bdb, err = nil, &DamagedError{Path: path, Panic: v, Where: where}
		}
	}()
	return bolt.Open(path, 0o600, o)
}

// CheckReport is what the check at Open found in the file (nil when Open
// created it): sound, or sound with one damaged meta page (MetaFallback).
func (db *DB) CheckReport() *Report { return db.checked }

func (db *DB) init() (err error) {
	defer db.guard(&err, debug.SetPanicOnFault(true))
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(metaSchema)
		switch {
		case v == nil:
			return meta.Put(metaSchema, u64(SchemaVersion))
		case len(v) != 8:
			return fmt.Errorf("corrupt schema version record (%d bytes)", len(v))
		case binary.BigEndian.Uint64(v) > SchemaVersion:
			return fmt.Errorf("%w: schema version %d, this gitaso understands up to %d; upgrade gitaso or use a new state file",
				ErrNewerSchema, binary.BigEndian.Uint64(v), SchemaVersion)
		case binary.BigEndian.Uint64(v) < SchemaVersion:
			// Future migrations go here, inside this transaction.
			return meta.Put(metaSchema, u64(SchemaVersion))
		}
		return nil
	})
}

// Path returns the database file path.
func (db *DB) Path() string { return db.path }

// Close releases the file and its lock. Committed transactions are durable
// whether or not Close is called.
func (db *DB) Close() error {
	if err := db.bolt.Close(); err != nil {
		return fmt.Errorf("state: close %s: %w", db.path, err)
	}
	return nil
}

// Update runs fn in one read-write bbolt transaction (one fsync). If fn returns
// an error nothing it wrote is kept. Write one reconcile's results in one
// Update: per-key transactions are about 100 times slower.
func (db *DB) Update(fn func(w *Writer) error) (err error) {
	defer db.guard(&err, debug.SetPanicOnFault(true))
	return db.bolt.Update(func(tx *bolt.Tx) error {
		return fn(&Writer{tx: tx, db: db})
	})
}

// Writer writes inside one Update transaction. It must not be used after the
// function passed to Update returns.
type Writer struct {
	tx *bolt.Tx
	db *DB

	resChanged bool // a resource was written: ResourcesVersion changes on commit
}

// view runs fn in a read transaction. A panic bbolt raises on a damaged page
// becomes a *DamagedError (damaged.go), and so does a fault reading the
// mapping.
func (db *DB) view(fn func(tx *bolt.Tx) error) (err error) {
	defer db.guard(&err, debug.SetPanicOnFault(true))
	return db.bolt.View(fn)
}

// SetPlan stores the latest plan: JSON as rendered by the planner, or that
// JSON compressed with gzip (Plan returns it decompressed).
func (w *Writer) SetPlan(planJSON []byte) error {
	if err := w.tx.Bucket(bucketMeta).Put(metaPlan, planJSON); err != nil {
		return fmt.Errorf("state: set plan: %w", err)
	}
	return nil
}

// SetLastGoodRevision records the revision that was last applied successfully.
func (w *Writer) SetLastGoodRevision(rev string) error {
	if err := w.tx.Bucket(bucketMeta).Put(metaLastGoodRevision, []byte(rev)); err != nil {
		return fmt.Errorf("state: set last good revision: %w", err)
	}
	return nil
}

// SetLatestRevision records the newest revision seen in the source, whether or
// not it could be applied.
func (w *Writer) SetLatestRevision(rev string) error {
	if err := w.tx.Bucket(bucketMeta).Put(metaLatestRevision, []byte(rev)); err != nil {
		return fmt.Errorf("state: set latest revision: %w", err)
	}
	return nil
}

// LastGoodRevision returns the revision last applied successfully, "" if none.
func (db *DB) LastGoodRevision() (string, error) {
	b, err := db.metaBytes(metaLastGoodRevision, "last good revision")
	return string(b), err
}

// LatestRevision returns the newest revision seen in the source, "" if none.
func (db *DB) LatestRevision() (string, error) {
	b, err := db.metaBytes(metaLatestRevision, "latest revision")
	return string(b), err
}

func (db *DB) metaBytes(key []byte, what string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(key); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: read %s: %w", what, err)
	}
	return out, nil
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// fileMode reports the permission bits of path, for tests and key checks.
func fileMode(path string) (os.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Mode().Perm(), nil
}
