package source

import (
	"context"
	"errors"
	"testing"
)

type missingPathRenderer struct{}

func (missingPathRenderer) Render(context.Context, []File) ([]File, error) {
	return nil, &PathNotFoundError{Path: "clusters/snd"}
}

// A renderer that finds its entry path missing does not know the revision;
// Build names it, so that the reconciler can hold that revision.
func TestBuildNamesRevisionOfMissingPath(t *testing.T) {
	_, err := BuildWithLimits(context.Background(), "abc123", nil, missingPathRenderer{}, Limits{})
	var missing *PathNotFoundError
	if !errors.As(err, &missing) || missing.Revision != "abc123" || missing.Path != "clusters/snd" {
		t.Fatalf("err %v (%+v), want the path and revision abc123", err, missing)
	}
}
