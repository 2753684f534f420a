package api

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Defaults of the bound on concurrent reads (Options.MaxInFlight,
// MaxQueued, QueueWait).
const (
	DefaultMaxInFlight = 64
	DefaultMaxQueued   = 512
	DefaultQueueWait   = 2 * time.Second
)

// RetryAfter is the Retry-After (seconds) of a 429 too_many_requests answer.
const RetryAfter = 1

// limiter bounds the reads of the API that run at once (inFlight); a
// request beyond waits in a queue of at most maxQueued for at most wait,
// and is answered 429 with Retry-After when the queue is full or its wait
// ends. The work, the buffers and the goroutines of the API are so bounded
// whatever the load: what is shed costs an error answer.
type limiter struct {
	slots     chan struct{}
	queued    atomic.Int64
	maxQueued int64
	wait      time.Duration
	shed      atomic.Uint64 // requests answered 429, for tests and logs
}

func newLimiter(inFlight, queued int, wait time.Duration) *limiter {
	if inFlight <= 0 {
		inFlight = DefaultMaxInFlight
	}
	if queued < 0 {
		queued = 0
	} else if queued == 0 {
		queued = DefaultMaxQueued
	}
	if wait <= 0 {
		wait = DefaultQueueWait
	}
	return &limiter{slots: make(chan struct{}, inFlight), maxQueued: int64(queued), wait: wait}
}

// acquire takes a slot, waiting in the queue when there is room in it; it
// reports false when the request is to be shed. release gives the slot back.
func (l *limiter) acquire(ctx context.Context) bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	if l.queued.Add(1) > l.maxQueued {
		l.queued.Add(-1)
		return false
	}
	defer l.queued.Add(-1)
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (l *limiter) release() { <-l.slots }

// bounded runs h within the limiter and answers 429 too_many_requests with
// Retry-After to the requests it sheds.
func (s *server) bounded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.limit.acquire(r.Context()) {
			s.limit.shed.Add(1)
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
			s.writeError(w, http.StatusTooManyRequests, CodeTooManyRequests,
				"too many requests at once: retry after "+strconv.Itoa(RetryAfter)+" s")
			return
		}
		defer s.limit.release()
		h(w, r)
	}
}
