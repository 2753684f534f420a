package charts

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
)

// ErrUnavailable is returned (wrapped) when a repository or registry answers 5xx or 429: it is there but cannot
// serve now.
var ErrUnavailable = errors.New("chart source unavailable")

// Unavailable reports whether a Fetch error comes from the world outside the repository rather than from what it
// asks for: a connection refused or reset, a TLS handshake that fails, a name that does not resolve, a timeout, an
// answer 5xx or 429. A chart or version that does not exist, a digest mismatch, refused credentials, a source
// gitaso does not read or an archive too large are the repository's problems: not unavailable.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	for _, own := range []error{ErrNotFound, ErrDigest, ErrTooLarge, ErrOffline, ErrAuth, ErrUnsupported, ErrInsecure, ErrInvalid} {
		if errors.Is(err, own) {
			return false
		}
	}
	var ue *url.Error
	var ne net.Error
	return errors.Is(err, ErrUnavailable) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unavailableStatus says an HTTP status means "try again later".
func unavailableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests
}
