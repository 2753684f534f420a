// Package syncbuf holds Buffer, a bytes.Buffer that a writer goroutine (a
// logger, a process's output) and a reader may use at once: what tests hand
// to slog or exec and read back while the work goes on.
package syncbuf
