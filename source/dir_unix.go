//go:build unix

package source

import "syscall"

// openFlags open manifests without blocking (a FIFO) and without following
// a symlink put in place of a checked file.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW

// errNotDir is the error for a path through a regular file.
var errNotDir error = syscall.ENOTDIR
