package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// notSaved are the plan flags a saved plan does not carry: what only the plan command has (its output) and what
// apply decides for itself (the saved plan says whether it read Azure). --substitute values are saved: they are
// not secret (the plan shows them; values from Secrets come through --substitute-from and are masked).
var notSaved = map[string]bool{"out": true, "output": true, "offline": true, "refresh": true, "help": true, "config": true}

// savedFlags returns the flags the user set on `gitaso plan --out`, so that `gitaso apply FILE` can run with
// none: the source (repository, branch, path or directory), the state file, the rendering and the credentials'
// places. A relative path that exists is made absolute, so apply may run from another directory. Flags whose
// name says they hold a secret value are left out; files holding secrets are named, never read.
func savedFlags(fs *pflag.FlagSet) map[string][]string {
	out := map[string][]string{}
	fs.Visit(func(f *pflag.Flag) {
		if notSaved[f.Name] || secretFlag(f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			out[f.Name] = append([]string(nil), sv.GetSlice()...)
			return
		}
		v := f.Value.String()
		if f.Value.Type() == "string" && v != "" && !filepath.IsAbs(v) && !strings.Contains(v, "://") {
			if _, err := os.Stat(v); err == nil {
				if abs, err := filepath.Abs(v); err == nil {
					v = abs
				}
			}
		}
		out[f.Name] = []string{v}
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// secretFlag says a flag's value itself may be a secret (a file of one is fine: --git-password-file).
func secretFlag(name string) bool {
	if strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-dir") {
		return false
	}
	for _, w := range []string{"password", "secret", "token"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// restoreSavedFlags sets, on apply's flags, every flag the saved plan carries that apply was not given: a flag
// given to apply wins. It says on w which it took, so the run is reproducible from the log.
func restoreSavedFlags(fs *pflag.FlagSet, saved map[string][]string, w io.Writer) error {
	names := make([]string, 0, len(saved))
	for n := range saved {
		names = append(names, n)
	}
	sort.Strings(names)
	var taken []string
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil || f.Changed || notSaved[n] {
			continue
		}
		vals := saved[n]
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if err := sv.Replace(vals); err != nil {
				return fmt.Errorf("saved plan: flag --%s: %w", n, err)
			}
			f.Changed = true
		} else {
			if len(vals) != 1 {
				return fmt.Errorf("saved plan: flag --%s: %d values for a single-valued flag", n, len(vals))
			}
			if err := fs.Set(n, vals[0]); err != nil {
				return fmt.Errorf("saved plan: flag --%s: %w", n, err)
			}
		}
		for _, v := range vals {
			taken = append(taken, "--"+n+"="+v)
		}
	}
	if len(taken) > 0 {
		fmt.Fprintf(w, "settings from the saved plan: %s\n", strings.Join(taken, " "))
	}
	return nil
}
