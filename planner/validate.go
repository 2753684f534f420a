package planner

import (
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/planner/aso"
)

// validateObject checks an object's fields against the catalog before
// anything is converted; the caller fills in file, line and object.
func validateObject(k *aso.Kind, content map[string]any) diag.List {
	return aso.Validate(k, content)
}

// suggestKinds returns the nearest known group/version/kind spellings.
func suggestKinds(group, version, kind string) []string {
	return aso.Suggest(group, version, kind)
}
