// Package rss gives back resident memory the process holds but no longer
// needs, beyond what Go's runtime returns by itself.
//
// DropExecutablePages drops the pages of the process's own executable from
// its resident set: package initialisation touches a large part of a big Go
// binary (client-go's, Helm's and kustomize's init code and tables: 42 MB of
// gitaso's 74 MB binary before it has done anything), and those pages stay
// resident although most are never used again. Only read-only mappings of
// the executable that hold no private (copy-on-write) page are dropped, so
// nothing but clean copies of the file is discarded; a page used again is
// read back from the kernel's page cache.
package rss
