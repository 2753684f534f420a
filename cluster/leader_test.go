package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

func TestIdentity(t *testing.T) {
	id, err := cluster.NewIdentity("http://10.244.1.17:8080")
	if err != nil {
		t.Fatal(err)
	}
	host, rest, ok := strings.Cut(id, "_")
	if !ok || host == "" || !strings.HasSuffix(rest, "@http://10.244.1.17:8080") || len(rest) != len("3fa91c@http://10.244.1.17:8080") {
		t.Errorf("identity %q: want <hostname>_<6 hex>@http://10.244.1.17:8080", id)
	}
	for _, bad := range []string{"", "10.0.0.1:8080", "ftp://x", "http://user@host:8080", "http://"} {
		if _, err := cluster.NewIdentity(bad); err == nil {
			t.Errorf("NewIdentity(%q) accepted", bad)
		}
	}
	tests := []struct{ identity, want string }{
		{"pod-1_3fa91c@http://10.244.1.17:8080", "http://10.244.1.17:8080"},
		{"odd@host_3fa91c@https://gitaso-0.gitaso:8443", "https://gitaso-0.gitaso:8443"},
		{"pod-1_3fa91c", ""},
		{"someone-else", ""},
		{"x@not a url", ""},
	}
	for _, tc := range tests {
		if got := cluster.IdentityURL(tc.identity); got != tc.want {
			t.Errorf("IdentityURL(%q) = %q, want %q", tc.identity, got, tc.want)
		}
	}
}

// elector is one candidate of TestElect.
type elector struct {
	name   string
	cancel context.CancelFunc
	led    chan struct{} // closed when it starts leading
	done   chan error    // Elect's result
}

func startElector(t *testing.T, cl *cluster.Cluster, opts cluster.LeaderOptions, name string) *elector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &elector{name: name, cancel: cancel, led: make(chan struct{}), done: make(chan error, 1)}
	id, err := cluster.NewIdentity("http://" + name + ".test:8080")
	if err != nil {
		t.Fatal(err)
	}
	opts.Identity = id
	go func() {
		e.done <- cl.Elect(ctx, opts, func(context.Context) { close(e.led) }, func() { t.Errorf("%s: leadership lost", name) })
	}()
	t.Cleanup(func() { cancel(); <-e.done })
	return e
}

// TestElect runs two candidates against a real API server: one leads and
// the Lease names its URL, the other waits; when the leader stops (and
// releases the Lease) the other takes over, and the Lease names it.
func TestElect(t *testing.T) {
	env := kubetest.Start(t)
	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := cluster.DefaultLeaderOptions()
	opts.Namespace, opts.Name = "default", "gitaso-test"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 200*time.Millisecond

	if _, err := cl.LeaderURL(ctx, opts.Namespace, opts.Name); !errors.Is(err, cluster.ErrNoLeader) {
		t.Fatalf("LeaderURL before any election: %v, want ErrNoLeader", err)
	}
	a := startElector(t, cl, opts, "a")
	select {
	case <-a.led:
	case <-time.After(30 * time.Second):
		t.Fatal("a did not lead")
	}
	b := startElector(t, cl, opts, "b")
	select {
	case <-b.led:
		t.Fatal("b leads while a holds the lease")
	case <-time.After(2 * opts.RetryPeriod):
	}
	if u, err := cl.LeaderURL(ctx, opts.Namespace, opts.Name); err != nil || u != "http://a.test:8080" {
		t.Fatalf("LeaderURL = %q, %v; want a's", u, err)
	}

	start := time.Now()
	a.cancel()
	if err := <-a.done; err != nil {
		t.Fatalf("a: Elect after cancel: %v", err)
	}
	a.done <- nil // for the cleanup
	select {
	case <-b.led:
		t.Logf("b took over %s after a stopped", time.Since(start).Round(time.Millisecond))
	case <-time.After(opts.LeaseDuration + 5*time.Second):
		t.Fatal("b did not take over within the lease duration")
	}
	if u, err := cl.LeaderURL(ctx, opts.Namespace, opts.Name); err != nil || u != "http://b.test:8080" {
		t.Fatalf("LeaderURL = %q, %v; want b's", u, err)
	}
}

// TestElectLost: a leader whose Lease is taken from it (here by an
// administrator rewriting the holder) calls onLost and returns
// ErrLeadershipLost.
func TestElectLost(t *testing.T) {
	env := kubetest.Start(t)
	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := cluster.LeaderOptions{Namespace: "default", Name: "gitaso-lost", Identity: "h_000000@http://a.test:8080",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	led, lost, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { done <- cl.Elect(ectx, opts, func(context.Context) { close(led) }, func() { close(lost) }) }()
	select {
	case <-led:
	case <-time.After(30 * time.Second):
		t.Fatal("did not lead")
	}
	leases := env.Clientset().CoordinationV1().Leases(opts.Namespace)
	for {
		l, err := leases.Get(ctx, opts.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other := "intruder_000000@http://b.test:8080"
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: l.Spec.LeaseDurationSeconds,
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
			break
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, cluster.ErrLeadershipLost) {
			t.Errorf("Elect = %v, want ErrLeadershipLost", err)
		}
	case <-time.After(opts.RenewDeadline + 10*time.Second):
		t.Fatal("Elect did not return after the lease was taken")
	}
	select {
	case <-lost:
	default:
		t.Error("onLost was not called")
	}
	if u, err := cl.LeaderURL(ctx, opts.Namespace, opts.Name); err != nil || u != "http://b.test:8080" {
		t.Errorf("LeaderURL = %q, %v; want the intruder's", u, err)
	}
}
