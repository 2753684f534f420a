package source

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by an input error whose cause lies outside the repository: a chart registry or
// repository that refuses the connection, fails its TLS handshake, times out or answers 5xx or 429. The commit may
// be fine; the source cannot be read now. Such a revision is not refused (a refusal stands until a later commit):
// the fetch failed, the loop shows it as a source failure and tries again at the next poll (Flux's HelmChart is
// Ready=False, ArtifactFailed, and retried).
var ErrUnavailable = errors.New("source unavailable")

// Unavailable returns the first of the revision's errors that wraps ErrUnavailable when every error of the
// revision does (a revision with any other input error is refused as usual), nil otherwise.
func (e *RevisionError) Unavailable() error {
	if e == nil || len(e.Errors) == 0 {
		return nil
	}
	for _, d := range e.Errors {
		if !errors.Is(d, ErrUnavailable) {
			return nil
		}
	}
	return e.Errors.Sorted()[0]
}

// UnavailableError is a fetch that read the commit but not what it needs from elsewhere (ErrUnavailable): the
// revision is neither applied nor refused.
type UnavailableError struct {
	Revision string
	Err      error // the first input error wrapping ErrUnavailable
}

func (e *UnavailableError) Error() string {
	rev := e.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("revision %s cannot be rendered now: %v", rev, e.Err)
}

// Unwrap returns the cause (it wraps ErrUnavailable), not the revision's input errors: the revision is not refused.
func (e *UnavailableError) Unwrap() error { return e.Err }

// AsUnavailable returns err as an *UnavailableError when it is (or wraps) a *RevisionError whose every input error
// is a source that cannot be read now (RevisionError.Unavailable); nil otherwise.
func AsUnavailable(err error) *UnavailableError {
	var re *RevisionError
	if !errors.As(err, &re) {
		return nil
	}
	if u := re.Unavailable(); u != nil {
		return &UnavailableError{Revision: re.Revision, Err: u}
	}
	return nil
}
