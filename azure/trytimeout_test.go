package azure_test

import (
	"context"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
)

// TestTryTimeoutEndsAHungRequest: ARM that accepts a request and does not answer fails the try at the try's
// deadline (and each retry at its own) instead of holding the caller for good (issue 24: every network call of
// the loop has a deadline); once ARM answers again, the same client works.
func TestTryTimeoutEndsAHungRequest(t *testing.T) {
	if azure.DefaultOptions().Retry.TryTimeout <= 0 {
		t.Fatal("the production options set no try timeout")
	}
	env := emutest.New(t, emutest.ClientOptions(func(o *azure.Options) {
		o.Retry.TryTimeout = 200 * time.Millisecond
		o.Retry.MaxRetries = 1
		o.Retry.RetryDelay = time.Millisecond
		o.Retry.MaxRetryDelay = 10 * time.Millisecond
	}))
	ctx := context.Background()
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/hung-rg"
	if _, err := env.Client.Put(ctx, rg, "2020-06-01", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	env.Emu.SetFaults(emulator.Faults{Latency: time.Minute, Methods: []string{"GET"}})
	done := make(chan error, 1)
	go func() { _, err := env.Client.Get(ctx, rg, "2020-06-01"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("GET of a hung ARM succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("GET of a hung ARM did not end within 30 s (two tries of 200 ms)")
	}
	env.Emu.SetFaults(emulator.Faults{})
	if _, err := env.Client.Get(ctx, rg, "2020-06-01"); err != nil {
		t.Fatalf("GET once ARM answers: %v", err)
	}
}
