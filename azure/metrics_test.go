package azure_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
)

// observation is one ObserveARMRequest call, its duration left out.
type observation struct {
	Type, Method string
	Code         int
	Err          bool
	Try          int
}

type recordMetrics struct {
	mu    sync.Mutex
	obs   []observation
	waits []time.Duration
}

func (r *recordMetrics) ObserveRateLimitWait(resourceType, method string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
}

func (r *recordMetrics) ObserveARMRequest(resourceType, method string, code int, err error, d time.Duration, try int) {
	if d <= 0 {
		panic("a try took no time")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, observation{resourceType, method, code, err != nil, try})
}

func (r *recordMetrics) take() []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.obs
	r.obs = nil
	return o
}

// TestMetricsPolicyObservesEveryTry sends requests through the production
// pipeline to the emulator: each try is observed with ASO's resource type
// label, a connection reset is a try without an answer, and a retry carries
// its try number.
func TestMetricsPolicyObservesEveryTry(t *testing.T) {
	rec := &recordMetrics{}
	env := emutest.New(t, emutest.ClientOptions(func(o *azure.Options) {
		o.Metrics = rec
		o.Retry.MaxRetries = 1
		o.Retry.RetryDelay = time.Millisecond
		o.Retry.MaxRetryDelay = 10 * time.Millisecond
	}))
	ctx := context.Background()
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/metrics-rg"
	if _, err := env.Client.Put(ctx, rg, "2020-06-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if len(got) == 0 || got[0] != (observation{"Microsoft.Resources/resourceGroups", "PUT", got[0].Code, false, 1}) || got[0].Code/100 != 2 {
		t.Fatalf("PUT observed as %+v, want one 2xx try of Microsoft.Resources/resourceGroups", got)
	}
	if _, err := env.Client.List(ctx, "/subscriptions/"+env.Sub+"/resourcegroups", "2020-06-01"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0].Type != "Microsoft.Resources/resourceGroups" || got[0].Method != "GET" {
		t.Errorf("a collection GET observed as %+v, want the type of its members", got)
	}

	env.Emu.SetFaults(emulator.Faults{ResetRate: 1, Methods: []string{"GET"}})
	if _, err := env.Client.Get(ctx, rg, "2020-06-01"); err == nil {
		t.Fatal("GET through connection resets succeeded")
	}
	want := []observation{
		{"Microsoft.Resources/resourceGroups", "GET", 0, true, 1},
		{"Microsoft.Resources/resourceGroups", "GET", 0, true, 2},
	}
	if d := cmp.Diff(want, rec.take()); d != "" {
		t.Errorf("reset GET tries (-want +got):\n%s", d)
	}
}

// TestMetricsPolicyObservesRateLimitWaits: with a write bucket of one token
// refilled 5 times a second, three PUTs sent at once leave the limiter about
// 0, 200 and 400 ms later, and each try's wait is observed.
func TestMetricsPolicyObservesRateLimitWaits(t *testing.T) {
	rec := &recordMetrics{}
	env := emutest.New(t, emutest.ClientOptions(func(o *azure.Options) {
		o.Metrics = rec
		o.Limits = azure.RateLimits{Reads: azure.Limit{Burst: 100, PerSecond: 100}, Writes: azure.Limit{Burst: 1, PerSecond: 5},
			Deletes: azure.Limit{Burst: 100, PerSecond: 100}}
	}))
	ctx := context.Background()
	rec.mu.Lock()
	rec.waits = nil
	rec.mu.Unlock()
	var wg sync.WaitGroup
	for _, name := range []string{"wait-a", "wait-b", "wait-c"} {
		wg.Go(func() {
			if _, err := env.Client.Put(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/"+name, "2020-06-01", []byte(`{"location":"westeurope"}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.mu.Lock()
	waits := slices.Clone(rec.waits)
	rec.mu.Unlock()
	slices.Sort(waits)
	if len(waits) != 3 || waits[1] < 100*time.Millisecond || waits[2] < 300*time.Millisecond {
		t.Errorf("rate limiter waits %v: want one per try, about 0, 200 and 400 ms", waits)
	}
}
