package state

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// ErrDamaged is matched (errors.Is) by every error saying the state file is
// damaged: a *DamagedError.
var ErrDamaged = errors.New("state file is damaged")

// DamagedError says the state file at Path is damaged and what of it: the
// pages and buckets found damaged (Report, from a check of the file), or the
// panic bbolt raised reading it (Panic, with Where it was raised).
type DamagedError struct {
	Path   string
	Report *Report
	// Panic is what bbolt panicked with on a read (a damaged page found at
	// run time, after the file passed its check at open); Where names the
	// function that raised it.
	Panic any
	Where string
}

// Pages lists the damaged pages the check named.
func (e *DamagedError) Pages() []uint64 {
	if e.Report == nil {
		return nil
	}
	return e.Report.DamagedPages()
}

// Buckets lists the damaged buckets the check named.
func (e *DamagedError) Buckets() []string {
	if e.Report == nil {
		return nil
	}
	return e.Report.Buckets()
}

// Error names what is damaged and the three ways out.
func (e *DamagedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state file %s is damaged: %s", e.Path, e.Summary())
	fmt.Fprintf(&b, ". %s", e.WaysOut())
	return b.String()
}

// Summary is what is damaged, in one line, without the ways out.
func (e *DamagedError) Summary() string {
	switch {
	case e.Panic != nil:
		return fmt.Sprintf("reading it failed in %s: %v", e.Where, e.Panic)
	case e.Report == nil || len(e.Report.Problems) == 0:
		return "no detail"
	}
	var b strings.Builder
	for i, p := range e.Report.Problems {
		if i == 3 {
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	if more := e.Report.Total - min(3, len(e.Report.Problems)); more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// Unwrap returns the panic's value when it was an error.
func (e *DamagedError) Unwrap() error {
	if err, ok := e.Panic.(error); ok {
		return err
	}
	return nil
}

// WaysOut tells the operator what to do about the damage.
func (e *DamagedError) WaysOut() string {
	if e.Report != nil && e.Report.DataIntact {
		return DataIntactWayOut(e.Path)
	}
	return WaysOut(e.Path)
}

// DataIntactWayOut is the way out when only the freelist is damaged.
func DataIntactWayOut(path string) string {
	return fmt.Sprintf("Only the freelist (bbolt's list of free pages) is damaged; every record checked out. "+
		"gitaso will not start over it: run `gitaso state rebuild --state %s` (with gitaso stopped): it copies every "+
		"record into a new file, losing nothing, and keeps the damaged one beside it (docs/state.md)", path)
}

// WaysOut tells the operator what to do about a damaged state file at path.
func WaysOut(path string) string {
	return fmt.Sprintf("gitaso will not start over it. Run `gitaso state check --state %s` for the damaged pages; "+
		"then either restore a backup of the file (with gitaso stopped), or run `gitaso state rebuild --state %s`: "+
		"it moves the damaged file aside (never deleting it), the new state's first run adopts every declared "+
		"resource that exists in Azure (a PUT of its manifest, as ASO adopts: nothing is deleted or re-created), "+
		"and the run history, last applied bodies and held approvals are lost (docs/state.md)", path, path)
}

// guard turns a panic raised while reading the bbolt file into a
// *DamagedError in *err and remembers it (Damaged). bbolt panics on a damaged
// page ("invalid page type", an index out of range) and, with
// debug.SetPanicOnFault set for the reading goroutine, a fault on a page past
// the end of the mapping becomes a panic too instead of killing the process.
// A panic raised by other code (a caller's callback, a bug) is re-raised:
// it says nothing about the file. Use it as
//
//	defer db.guard(&err, debug.SetPanicOnFault(true))
func (db *DB) guard(err *error, oldFault bool) {
	debug.SetPanicOnFault(oldFault)
	v := recover()
	if v == nil {
		return
	}
	where, ok := panicSite()
	if !ok {
		panic(v)
	}
	d := &DamagedError{Path: db.path, Panic: v, Where: where}
	db.damaged.CompareAndSwap(nil, d)
	*err = d
}

// panicSite names the function that raised the panic being recovered, and
// says whether it is bbolt's (or a memory fault reading the mapping) or
// this package's own decoding of the bytes it read.
func panicSite() (string, bool) {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(3, pcs) // panicSite, guard, the deferred call
	frames := runtime.CallersFrames(pcs[:n])
	afterPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			afterPanic = true
		case afterPanic && (strings.HasPrefix(f.Function, "runtime.") || strings.HasPrefix(f.Function, "encoding/binary.")):
			// runtime.panicIndex, sigpanic, a short key decoded: the caller raised it.
		case afterPanic:
			return f.Function, strings.HasPrefix(f.Function, "go.etcd.io/bbolt") ||
				strings.HasPrefix(f.Function, "github.com/gitaso/gitaso/state.")
		}
		if !more {
			return "", false
		}
	}
}

// Damaged returns the first damage a read found since Open (a
// *DamagedError), or nil: the daemon reports it on /readyz.
func (db *DB) Damaged() error {
	if d := db.damaged.Load(); d != nil {
		return d
	}
	return nil
}
