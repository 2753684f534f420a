// Package diag holds the error type every stage of gitaso uses to point at bad
// input: the file (and line where known), the object (namespace/Kind/name) and
// the field path, so that a user can find and fix the problem without guessing.
//
// A List collects every error of a commit so that they are reported together.
package diag
