//go:build !unix

package source

import "errors"

// openFlags: other systems have no FIFOs or symlinks to follow by surprise
// in the sense of O_NONBLOCK and O_NOFOLLOW; the mode checks remain.
const openFlags = 0

// errNotDir never matches: such systems report fs.ErrNotExist.
var errNotDir = errors.New("not a directory")
