package api

import (
	"log/slog"
	"net/http"
	"time"
)

// ServerOptions bound what one client connection can hold of the server.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading the request line and headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request, body included (a slow
	// body is cut).
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// Logger receives the server's own errors (failed TLS handshakes,
	// accept errors) at Warn; nil uses slog.Default().
	Logger *slog.Logger
}

// DefaultServerOptions returns limits for an API whose largest request is a
// 1 MiB push notification and whose answers are small: headers within 10 s,
// a whole request within 30 s, a response within 60 s, keep-alive
// connections closed after 60 s idle, 64 KiB of headers.
func DefaultServerOptions() ServerOptions {
	return ServerOptions{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// NewServer returns an http.Server serving h with the limits of o. Bodies
// are bounded by the handlers of New (http.MaxBytesReader): 64 KiB for sync
// and approve, 1 MiB for the webhook.
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
