package emulator

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Stats are request counters since start or the last ResetStats.
type Stats struct {
	Requests int64            `json:"requests"`
	ByMethod map[string]int64 `json:"byMethod"`
	// ByType counts by lower-cased ARM type ("identity" for token endpoints, "admin" for the admin API, "registry"
	// for the container registries' data plane).
	ByType   map[string]int64 `json:"byType"`
	ByStatus map[int]int64    `json:"byStatus"` // 0 means the connection was reset
	// ByOperation counts "METHOD type status", e.g. "PUT microsoft.storage/storageaccounts 201".
	ByOperation    map[string]int64 `json:"byOperation"`
	Throttled      int64            `json:"throttled"`
	FaultsInjected int64            `json:"faultsInjected"`
	TokensIssued   int64            `json:"tokensIssued"`
	Resources      int              `json:"resources"`
	InFlightOps    int64            `json:"inFlightOperations"`
}

// LogEntry is one request in the request log.
type LogEntry struct {
	Time      time.Time     `json:"time"`
	Method    string        `json:"method"`
	Path      string        `json:"path"`
	Query     string        `json:"query,omitempty"`
	Type      string        `json:"type,omitempty"`
	Status    int           `json:"status"`
	Code      string        `json:"code,omitempty"` // ARM error code, when there was one
	Principal string        `json:"principal,omitempty"`
	Fault     string        `json:"fault,omitempty"`
	Duration  time.Duration `json:"duration"`
}

type statsCollector struct {
	mu    sync.Mutex
	s     Stats
	log   []LogEntry
	next  int
	full  bool
	limit int
}

func newStatsCollector(limit int) *statsCollector {
	c := &statsCollector{limit: limit}
	c.resetLocked()
	return c
}

func (c *statsCollector) resetLocked() {
	c.s = Stats{ByMethod: map[string]int64{}, ByType: map[string]int64{}, ByStatus: map[int]int64{}, ByOperation: map[string]int64{}}
	if c.limit > 0 {
		c.log = make([]LogEntry, 0, min(c.limit, 1024))
	}
	c.next, c.full = 0, false
}

func (c *statsCollector) record(r *http.Request, status int, info *reqInfo, start time.Time) {
	ent := LogEntry{Time: start.UTC(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Type: info.typ, Status: status,
		Code: info.code, Principal: info.principal, Fault: info.fault, Duration: time.Since(start)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Requests++
	c.s.ByMethod[r.Method]++
	c.s.ByType[info.typ]++
	c.s.ByStatus[status]++
	c.s.ByOperation[r.Method+" "+info.typ+" "+strconv.Itoa(status)]++
	if status == http.StatusTooManyRequests {
		c.s.Throttled++
	}
	if info.fault != "" {
		c.s.FaultsInjected++
	}
	if c.limit <= 0 {
		return
	}
	if len(c.log) < c.limit {
		c.log = append(c.log, ent)
		return
	}
	c.log[c.next] = ent
	c.next = (c.next + 1) % c.limit
	c.full = true
}

func (c *statsCollector) tokenIssued() {
	c.mu.Lock()
	c.s.TokensIssued++
	c.mu.Unlock()
}

// Stats returns a copy of the counters.
func (e *Emulator) Stats() Stats {
	c := e.stats
	c.mu.Lock()
	s := c.s
	s.ByMethod = cloneMap(c.s.ByMethod)
	s.ByType = cloneMap(c.s.ByType)
	s.ByStatus = cloneMap(c.s.ByStatus)
	s.ByOperation = cloneMap(c.s.ByOperation)
	c.mu.Unlock()
	e.mu.RLock()
	s.Resources = e.store.len()
	e.mu.RUnlock()
	s.InFlightOps = e.pending.Load()
	return s
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// RequestLog returns the most recent requests, oldest first.
func (e *Emulator) RequestLog() []LogEntry {
	c := e.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.full {
		return append([]LogEntry(nil), c.log...)
	}
	out := make([]LogEntry, 0, len(c.log))
	out = append(out, c.log[c.next:]...)
	return append(out, c.log[:c.next]...)
}

// ResetStats clears the counters and the request log.
func (e *Emulator) ResetStats() {
	e.stats.mu.Lock()
	e.stats.resetLocked()
	e.stats.mu.Unlock()
}
