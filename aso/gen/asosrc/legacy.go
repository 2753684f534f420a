package asosrc

import (
	"os"
	"path/filepath"
)

// IsLegacyLayout reports whether the API package of group and version in
// the tree at root has its ARM payload types beside the Kubernetes types
// (*_spec_arm_types_gen.go, named X_ARM: the layout before v2.11.0, which
// Schema reads too) instead of in an arm subpackage.
func IsLegacyLayout(root, group, version string) bool {
	dir := filepath.Join(root, filepath.FromSlash(apiDir(group, version)))
	if fi, err := os.Stat(filepath.Join(dir, "arm")); err == nil && fi.IsDir() {
		return false
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "*_arm_types_gen.go"))
	return len(ms) > 0
}
