package azure

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSubscriptionOf(t *testing.T) {
	for in, want := range map[string]string{
		"/subscriptions/ABC/resourceGroups/x": "ABC",
		"/SUBSCRIPTIONS/abc":                  "abc",
		"/providers/Microsoft.ResourceGraph":  "",
		"/subscriptionsX/abc":                 "",
	} {
		if got := subscriptionOf(in); got != want {
			t.Errorf("subscriptionOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// The limiter is per subscription and shared by every credential of it.
func TestRateLimitSharedAcrossCredentials(t *testing.T) {
	f := newFakeAzure(t)
	f.handle("GET", rgID, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"id": rgID}) })
	other := "/subscriptions/ffffffff-0000-0000-0000-000000000000/resourceGroups/rg1"
	f.handle("GET", other, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"id": other}) })
	o := testOptions()
	o.Limits = RateLimits{Reads: Limit{Burst: 2, PerSecond: 0.001}, Writes: Limit{Burst: 1, PerSecond: 0.001}, Deletes: Limit{Burst: 1, PerSecond: 0.001}}
	cs := NewClients(f.cloud(), o)
	a, _ := cs.For(secretCred(t, "team-a/aso-credential"))
	b, _ := cs.For(func() *Credential {
		c, _ := CredentialFromSecret("team-b/aso-credential", map[string]string{
			KeySubscriptionID: testSub, KeyTenantID: testTenant, KeyClientID: "team-b", KeyClientSecret: testSecret})
		return c
	}())
	if a == b {
		t.Fatal("distinct credentials share a client")
	}
	ctx := context.Background()
	if _, err := a.Get(ctx, rgID, rgAPI); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, rgID, rgAPI); err != nil {
		t.Fatal(err)
	}
	// The bucket of 2 reads is spent by two credentials together: a third read must wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := a.Get(short, rgID, rgAPI)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("third read: want a rate-limit wait, got %v", err)
	}
	// Another subscription has its own bucket.
	if _, err := a.Get(ctx, other, rgAPI); err != nil {
		t.Fatalf("other subscription throttled: %v", err)
	}
}

func TestRateLimitDrainsOnRemainingHeader(t *testing.T) {
	s := newSubLimiter(RateLimits{Reads: Limit{Burst: 100, PerSecond: 0.001}, Writes: Limit{Burst: 100, PerSecond: 0.001}, Deletes: Limit{Burst: 100, PerSecond: 0.001}})
	resp := &http.Response{StatusCode: 200, Header: http.Header{}}
	resp.Header.Set("x-ms-ratelimit-remaining-subscription-writes", "7")
	s.observe(opWrite, resp)
	if got := s.buckets[opWrite].Tokens(); got > 7.01 || got < 6.9 {
		t.Errorf("write tokens after header = %.2f, want 7", got)
	}
	if got := s.buckets[opRead].Tokens(); got < 99 {
		t.Errorf("read bucket touched: %.2f", got)
	}
	// A higher remaining count never adds tokens.
	resp.Header.Set("x-ms-ratelimit-remaining-subscription-writes", "50")
	s.observe(opWrite, resp)
	if got := s.buckets[opWrite].Tokens(); got > 7.01 {
		t.Errorf("tokens grew to %.2f", got)
	}
	// A 429 empties the bucket.
	s.observe(opRead, &http.Response{StatusCode: 429, Header: http.Header{}})
	if got := s.buckets[opRead].Tokens(); got > 0.01 {
		t.Errorf("read tokens after 429 = %.2f", got)
	}
}

func TestClassOf(t *testing.T) {
	for m, want := range map[string]opClass{"GET": opRead, "HEAD": opRead, "PUT": opWrite, "PATCH": opWrite, "POST": opWrite, "DELETE": opDelete} {
		if classOf(m) != want {
			t.Errorf("%s", m)
		}
	}
}
