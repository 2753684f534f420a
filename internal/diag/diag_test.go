package diag

import (
	"errors"
	"fmt"
	"testing"
)

func TestListUnwrap(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("refused: %w", List{{File: "a.yaml", Msg: "x"}, {File: "b.yaml", Msg: "y", Err: cause}})
	if !errors.Is(err, cause) {
		t.Error("errors.Is does not see a cause inside a List")
	}
	var de *Error
	if !errors.As(err, &de) || de.File != "a.yaml" {
		t.Errorf("errors.As: %+v", de)
	}
}
