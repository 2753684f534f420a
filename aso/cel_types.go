package aso

import "github.com/google/cel-go/cel"

// selfType returns the CEL type of self for kind k and the option that
// declares it.
func selfType(k *Kind) (*cel.Type, cel.EnvOption, error) {
	return cel.DynType, func(e *cel.Env) (*cel.Env, error) { return e, nil }, nil
}
