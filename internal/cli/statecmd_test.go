package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// `gitaso state check` says sound or names the damage with exit code 5;
// compact refuses a damaged file as it is; rebuild moves it aside (never
// deletes it), says what is lost, and leaves a path a new state opens at;
// a sound file is not rebuilt without --force.
func TestStateCheckAndRebuild(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := state.Open(file, state.WithoutKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(w *state.Writer) error {
		for i := range 300 {
			r := record.Resource{Namespace: "n", Group: "resources.azure.com", Kind: "ResourceGroup", Name: fmt.Sprintf("rg-%03d", i),
				ARMID: fmt.Sprintf("/subscriptions/s/resourceGroups/rg-%03d", i), AppliedBody: []byte(`{"location":"westeurope","tags":{"a":"` + strings.Repeat("x", 500) + `"}}`)}
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, stderr, err := run(t, "state", "check", "--state", file)
	if exitCode(err) != 0 || !strings.Contains(out, file+": sound: ") {
		t.Fatalf("sound file: exit %d (%v)\n%s%s", exitCode(err), err, out, stderr)
	}
	if _, _, err := run(t, "state", "rebuild", "--state", file); !errors.Is(err, state.ErrSound) {
		t.Errorf("rebuild of a sound file: %v, want ErrSound", err)
	}

	if err := os.Truncate(file, 100_000); err != nil {
		t.Fatal(err)
	}
	damaged, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "state", "check", "--state", file)
	if exitCode(err) != 5 || !errors.Is(err, state.ErrDamaged) {
		t.Errorf("truncated file: exit %d (%v), want 5 and ErrDamaged", exitCode(err), err)
	}
	for _, want := range []string{"DAMAGED", "truncated: the file is 100000 bytes", "gitaso state rebuild --state " + file, "restore a backup"} {
		if !strings.Contains(out, want) {
			t.Errorf("state check does not say %q:\n%s", want, out)
		}
	}
	if _, _, err := run(t, "state", "compact", "--state", file); !errors.Is(err, state.ErrDamaged) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("compact of a damaged file: %v", err)
	}

	out, stderr, err = run(t, "state", "rebuild", "--state", file)
	if err != nil {
		t.Fatalf("rebuild: %v\n%s", err, stderr)
	}
	asides, _ := filepath.Glob(file + ".damaged-*")
	if len(asides) != 1 {
		t.Fatalf("files moved aside: %v", asides)
	}
	if b, err := os.ReadFile(asides[0]); err != nil || !bytes.Equal(b, damaged) {
		t.Errorf("the damaged file was not kept as it was at %s: %v", asides[0], err)
	}
	for _, want := range []string{"moved to " + asides[0], "history", "adopts"} {
		if !strings.Contains(out, want) {
			t.Errorf("rebuild does not say %q:\n%s", want, out)
		}
	}
	// A new state marked as rebuilt takes its place: sound, empty.
	if _, _, err := run(t, "state", "check", "--state", file); err != nil {
		t.Errorf("check of the new state: %v, want sound", err)
	}
	db, err = state.Open(file, state.WithoutKeyFile())
	if err != nil {
		t.Fatalf("a new state after rebuild: %v", err)
	}
	defer db.Close()
	if rs, err := db.Resources(record.Filter{}); err != nil || len(rs) != 0 {
		t.Errorf("the new state holds %d resources (%v), want none", len(rs), err)
	}
	if m, err := db.Rebuilt(); err != nil || m == nil || m.Aside != asides[0] {
		t.Errorf("the new state's rebuilt marker: %+v, %v; want one naming %s", m, err, asides[0])
	}
}

// `gitaso state import` marks a new state (the file created) for adoption
// without a write, and says so.
func TestStateImport(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gitaso.db")
	out, stderr, err := run(t, "state", "import", "--state", file)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "marked (import") || !strings.Contains(out, "without a write") {
		t.Errorf("import says:\n%s", out)
	}
	db, err := state.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if m, err := db.Rebuilt(); err != nil || m == nil || !m.Import || m.Why() != "import" {
		t.Errorf("marker: %+v, %v; want an import", m, err)
	}
}
