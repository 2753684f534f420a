package render

import (
	"context"
	"errors"
	"fmt"
)

// ErrKnownAfterApply is wrapped by a Lookup whose object is declared but
// not applied yet: the release waits and is rendered again once it exists.
var ErrKnownAfterApply = errors.New("known after apply")

// lookup returns the templates' lookup function: Options.Lookup, an empty
// map without one. A lookup whose object is known after apply records it
// in *afterApply and answers an empty map, so that the render goes on (and
// its result is dropped: the release waits).
func (w *fluxWalk) lookup(ctx context.Context, afterApply *error) func(apiVersion, kind, namespace, name string) (map[string]any, error) {
	return func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		if w.r.opts.Lookup == nil {
			return map[string]any{}, nil
		}
		v, err := w.r.opts.Lookup(ctx, apiVersion, kind, namespace, name)
		if errors.Is(err, ErrKnownAfterApply) {
			if *afterApply == nil {
				*afterApply = fmt.Errorf("lookup of %s %s %s/%s: %w (the release is rendered once it is applied)", apiVersion, kind, namespace, name, err)
			}
			return map[string]any{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("lookup %s %s %s/%s: %w", apiVersion, kind, namespace, name, err)
		}
		if v == nil {
			v = map[string]any{}
		}
		return v, nil
	}
}
