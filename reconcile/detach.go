package reconcile

import (
	"fmt"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// DetachNamespace forgets every resource the state holds in namespace, with
// what each exported, in one transaction, and sends nothing to Azure: the
// resources stay as they are and gitaso no longer manages them (the way
// back to ASO, gitaso export). It returns the resources it forgot. Their
// manifests, if gitaso's repository still has them, are adopted again by
// the next run unless ASO's objects there manage them (the refusal of
// runs beside ASO) or they are removed from the repository.
func DetachNamespace(db *state.DB, namespace string) ([]record.Resource, error) {
	if namespace == "" {
		return nil, fmt.Errorf("detach: a namespace is required")
	}
	rs, err := db.Resources(record.Filter{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("detach namespace %s: %w", namespace, err)
	}
	var gone []record.Resource
	err = db.Update(func(w *state.Writer) error {
		gone = gone[:0]
		for _, r := range rs {
			if r.Namespace != namespace {
				continue
			}
			if err := w.DeleteChange(r.Key()); err != nil {
				return err
			}
			if err := forget(w, r.Key(), r); err != nil {
				return err
			}
			gone = append(gone, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detach namespace %s: %w", namespace, err)
	}
	return gone, nil
}
