package apiload

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// AppliedBody is the applied body of every generated resource: a storage
// account's, about 290 bytes.
const AppliedBody = `{"location":"westeurope","properties":{"minimumTlsVersion":"TLS1_2","allowBlobPublicAccess":false,"encryption":{"keySource":"Microsoft.Storage"},"networkAcls":{"defaultAction":"Deny","bypass":"AzureServices"}},"sku":{"name":"Standard_LRS"},"tags":{"team":"a","cost-center":"4711"}}`

// Resource returns the i-th generated resource: StorageAccount acct<i> in
// namespace team-<i mod 50>, not ready when i mod 20 is 7.
func Resource(i int) record.Resource {
	st := record.StatusTrue
	if i%20 == 7 {
		st = record.StatusFalse
	}
	ns := fmt.Sprintf("team-%02d", i%50)
	name := fmt.Sprintf("acct%05d", i)
	t := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	return record.Resource{
		Namespace: ns, Group: "storage.azure.com", Version: "v1", Kind: "StorageAccount", Name: name,
		ARMID:       "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + name,
		APIVersion:  "2023-01-01",
		File:        ns + "/" + name + ".yaml",
		AppliedHash: "sha256:0123456789abcdef",
		AppliedBody: json.RawMessage(AppliedBody),
		Generation:  2,
		Ready:       record.Condition{Type: record.ConditionReady, Status: st, Reason: "Succeeded", ObservedGeneration: 2, LastTransitionTime: t},
		Revision:    "rev1",
		UpdatedAt:   t,
		Policy:      "manage",
		DependsOn:   []string{record.ResourceKey(ns, "resources.azure.com", "ResourceGroup", "rg")},
	}
}

// Change writes round i of a steady trickle of changes: ten of the 10,000
// generated resources, spread over the keys, at generation 3+i.
func Change(db *state.DB, i int) error {
	return db.Update(func(w *state.Writer) error {
		for j := range 10 {
			r := Resource((i*10 + j) * 97 % 10000)
			r.Generation = int64(3 + i)
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Generate writes n resources (Resource(0) … Resource(n-1)) into the state
// file at path, created when missing, in one transaction.
func Generate(ctx context.Context, path string, n int) error {
	db, err := state.Open(path)
	if err != nil {
		return fmt.Errorf("generate %s: %w", path, err)
	}
	err = db.Update(func(w *state.Writer) error {
		for i := range n {
			if i%1000 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := w.PutResource(Resource(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generate %s: %w", path, err)
	}
	return nil
}

// Options configures Run.
type Options struct {
	// URL is requested with GET.
	URL string
	// Rate is the requests per second sent, whatever the answers take.
	Rate float64
	// Duration is how long requests are sent; Count, when positive, sends
	// that many instead.
	Duration time.Duration
	Count    int
	// MaxInFlight bounds the requests waiting for an answer (and the
	// connections): a request due while MaxInFlight are out waits for one
	// to end, and its latency counts the wait. Default 1024.
	MaxInFlight int
	// Gzip asks for gzip-encoded answers (Accept-Encoding: gzip) and
	// decodes them, as a browser does; false asks for identity.
	Gzip bool
	// PID, when positive, is the serving process whose VmRSS and VmHWM
	// (/proc/PID/status) are read before, during (every 100 ms) and after
	// the load. 0: this process.
	PID int
	// Settle is how long after the last answer the memory is read again
	// (default 2 s).
	Settle time.Duration
	// Client sends the requests; nil: a client of Run's own.
	Client *http.Client
}

// Result is what Run measured. Latencies are from the time each request
// was due to the end of its answer's body.
type Result struct {
	Sent     int           // requests sent
	OK       int           // 200 answers
	Rejected int           // 429 and 503 answers (shed load)
	Failed   int           // other statuses and transport errors
	Elapsed  time.Duration // from the first due time to the last answer
	// Throughput is OK answers per second of Elapsed.
	Throughput    float64
	P50, P99, Max time.Duration // of the 200 answers
	RejectedP99   time.Duration // of the shed ones
	Bytes         int64         // body bytes of the last 200 answer (decoded)
	// CPU is the processor time (user and system) the serving process
	// spent from the first request to the last answer.
	CPU            time.Duration
	RSSBefore      int64   // bytes
	RSSPeak        int64   // the largest VmRSS read during the load
	RSSSeries      []int64 // the largest VmRSS of every 5 s of the load
	RSSAfter       int64   // Settle after the load
	HWM            int64   // VmHWM after the load: the peak since the process started
	FirstError     string
	FirstErrStatus int
}

func (r Result) String() string {
	mb := func(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB" }
	s := fmt.Sprintf("sent %d in %s: %d ok (%.0f req/s), %d rejected (429/503), %d failed; "+
		"latency p50 %s p99 %s max %s (rejected p99 %s); %d B/answer; server CPU %s (%s per request); RSS before %s, peak during %s, after %s, HWM %s",
		r.Sent, r.Elapsed.Round(time.Millisecond), r.OK, r.Throughput, r.Rejected, r.Failed,
		ms(r.P50), ms(r.P99), ms(r.Max), ms(r.RejectedP99), r.Bytes, r.CPU.Round(time.Millisecond), ms(r.CPU/time.Duration(max(r.Sent, 1))), mb(r.RSSBefore), mb(r.RSSPeak), mb(r.RSSAfter), mb(r.HWM))
	if len(r.RSSSeries) > 1 {
		s += "; RSS peak by 5 s:"
		for _, b := range r.RSSSeries {
			s += " " + strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64)
		}
		s += " MB"
	}
	if r.FirstError != "" {
		s += "; first failure: " + r.FirstError
	}
	return s
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

type sample struct {
	lat    time.Duration
	status int
	bytes  int64
	err    error
}

// Run sends GET Options.URL at Options.Rate and measures the answers; see
// Options and Result.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Rate <= 0 {
		return Result{}, fmt.Errorf("apiload: rate %v must be positive", o.Rate)
	}
	n := o.Count
	if n <= 0 {
		n = int(o.Rate * o.Duration.Seconds())
	}
	if n <= 0 {
		return Result{}, errors.New("apiload: give a Duration or a Count")
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1024
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	client := o.Client
	if client == nil {
		tr := &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        o.MaxInFlight,
			MaxIdleConnsPerHost: o.MaxInFlight,
			MaxConnsPerHost:     o.MaxInFlight,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true, // Accept-Encoding is set by hand
		}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	var res Result
	var err error
	if res.RSSBefore, _, err = Memory(o.PID); err != nil {
		return res, err
	}

	samples := make([]sample, n)
	slots := make(chan struct{}, o.MaxInFlight)
	var wg sync.WaitGroup
	stopMem := make(chan struct{})
	memDone := make(chan int64)
	go func() { // the peak VmRSS during the load, and of every 5 s
		peak, window := res.RSSBefore, int64(0)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-stopMem:
				if window > 0 {
					res.RSSSeries = append(res.RSSSeries, window)
				}
				memDone <- peak
				return
			case <-t.C:
				rss, _, err := Memory(o.PID)
				if err != nil {
					continue
				}
				peak, window = max(peak, rss), max(window, rss)
				if i%50 == 0 {
					res.RSSSeries, window = append(res.RSSSeries, window), 0
				}
			}
		}
	}()

	cpu0, err := CPUTime(o.PID)
	if err != nil {
		return res, err
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / o.Rate)
	sent := 0
	for sent < n && ctx.Err() == nil {
		now := time.Now()
		// Every request due by now goes out now; the wait for a free slot
		// counts in its latency.
		for ; sent < n; sent++ {
			due := start.Add(time.Duration(sent) * interval)
			if due.After(now) {
				break
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			go func(i int, due time.Time) {
				defer func() { <-slots; wg.Done() }()
				samples[i] = get(ctx, client, o.URL, o.Gzip, due)
			}(sent, due)
		}
		if sent < n {
			if d := time.Until(start.Add(time.Duration(sent) * interval)); d > 0 {
				time.Sleep(d)
			}
		}
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if cpu1, err := CPUTime(o.PID); err == nil {
		res.CPU = cpu1 - cpu0
	}
	close(stopMem)
	res.RSSPeak = <-memDone
	res.Sent = sent

	var ok, shed []time.Duration
	for _, s := range samples[:sent] {
		switch {
		case s.err == nil && s.status == http.StatusOK:
			ok = append(ok, s.lat)
			res.Bytes = s.bytes
		case s.err == nil && (s.status == http.StatusTooManyRequests || s.status == http.StatusServiceUnavailable):
			shed = append(shed, s.lat)
		default:
			res.Failed++
			if res.FirstError == "" {
				if s.err != nil {
					res.FirstError = s.err.Error()
				} else {
					res.FirstError, res.FirstErrStatus = "status "+strconv.Itoa(s.status), s.status
				}
			}
		}
	}
	res.OK, res.Rejected = len(ok), len(shed)
	res.Throughput = float64(res.OK) / res.Elapsed.Seconds()
	res.P50, res.P99, res.Max = quantile(ok, 0.50), quantile(ok, 0.99), quantile(ok, 1)
	res.RejectedP99 = quantile(shed, 0.99)

	if o.Client == nil {
		client.CloseIdleConnections()
	}
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
	}
	if res.RSSAfter, res.HWM, err = Memory(o.PID); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// readBufs are the buffers answers are read into: large, so that a 250 KB
// answer costs a few reads (io.Discard reads 8 KB at a time).
var readBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func get(ctx context.Context, client *http.Client, url string, gz bool, due time.Time) sample {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sample{err: err}
	}
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{lat: time.Since(due), err: err}
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return sample{lat: time.Since(due), err: fmt.Errorf("gzip answer: %w", err)}
		}
		body = zr
	}
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	var n int64
	for {
		m, rerr := body.Read(*buf)
		n += int64(m)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	return sample{lat: time.Since(due), status: resp.StatusCode, bytes: n, err: err}
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

// Memory returns the VmRSS and VmHWM of process pid (0: this one), in
// bytes, from /proc/PID/status.
func Memory(pid int) (rss, hwm int64, err error) {
	p := "/proc/self/status"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, 0, fmt.Errorf("apiload: read memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("apiload: read memory: %s %q: %w", k, v, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// CPUTime returns the processor time (user and system) process pid (0: this
// one) has used, from /proc/PID/stat.
func CPUTime(pid int) (time.Duration, error) {
	p := "/proc/self/stat"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("apiload: read CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis; utime and stime are the 14th
	// and 15th fields of the line.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("apiload: read CPU time: unexpected %s", p)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("apiload: read CPU time: %s: %w", p, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on Linux.
const clockTicks = 100
