package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election: replicas of gitaso serve compete for one
// coordination.k8s.io Lease (client-go's leaderelection with a LeaseLock,
// as controller-runtime does). The holder applies; the others are
// standbys that answer the read API by forwarding it to the holder.
//
// A holder's identity is "<hostname>_<6 random hex digits>@<advertise URL>",
// e.g. "gitaso-7d9c5-x2k4q_3fa91c@http://10.244.1.17:8080": the random part
// tells two processes of one pod apart (a restarted container), and the URL
// after the last '@' is where the holder serves its API, which is how a
// standby finds it (LeaderURL). An advertise URL therefore has no '@' of
// its own (no user information).

// LeaderOptions name the Lease and its timing (client-go's
// LeaderElectionConfig). A standby takes over at most LeaseDuration after
// the holder last renewed; a holder that cannot renew within RenewDeadline
// gives up; every RetryPeriod a candidate tries to acquire and the holder
// to renew.
type LeaderOptions struct {
	// Namespace and Name of the Lease (created when missing).
	Namespace, Name string
	// Identity of this candidate (NewIdentity).
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// DefaultLeaderOptions returns controller-runtime's timing: a lease of 15 s,
// renewed within 10 s, tried every 2 s.
func DefaultLeaderOptions() LeaderOptions {
	return LeaderOptions{Name: "gitaso", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// ErrLeadershipLost is returned by Elect when this candidate led and could
// not renew its Lease in time: another candidate may already lead, so the
// caller must stop writing at once (gitaso serve exits).
var ErrLeadershipLost = errors.New("leader election lost")

// ErrNoLeader is returned by LeaderURL when the Lease does not exist or no
// one holds it (never acquired, or released by a leader that stopped).
var ErrNoLeader = errors.New("no leader holds the lease")

// NewIdentity returns a candidate identity for a process serving its API at
// advertiseURL: "<hostname>_<6 random hex digits>@<advertiseURL>".
func NewIdentity(advertiseURL string) (string, error) {
	if err := checkAdvertiseURL(advertiseURL); err != nil {
		return "", err
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gitaso"
	}
	host = strings.ReplaceAll(host, "@", "_")
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("leader identity: %w", err)
	}
	return host + "_" + hex.EncodeToString(b[:]) + "@" + advertiseURL, nil
}

// checkAdvertiseURL accepts an absolute http or https URL without user
// information (whose '@' would end the identity's host part).
func checkAdvertiseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("advertise URL %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.Contains(s, "@") {
		return fmt.Errorf("advertise URL %q: want http://HOST:PORT or https://HOST:PORT, without user information", s)
	}
	return nil
}

// IdentityURL returns the advertise URL of an identity (what follows its
// last '@'), or "" when it has none (a holder that is not gitaso).
func IdentityURL(identity string) string {
	i := strings.LastIndexByte(identity, '@')
	if i < 0 || checkAdvertiseURL(identity[i+1:]) != nil {
		return ""
	}
	return identity[i+1:]
}

// Elect campaigns for the Lease until ctx ends. When this candidate
// acquires it, onLead runs (in its own goroutine) with a context that ends
// when leadership ends. When leadership is lost while ctx is still alive,
// onLost is called and Elect returns ErrLeadershipLost; when ctx ends,
// Elect releases the Lease if it holds it (a standby then takes over after
// one RetryPeriod rather than a whole LeaseDuration) and returns nil.
// onLost is not called for a candidate that never led.
func (c *Cluster) Elect(ctx context.Context, opts LeaderOptions, onLead func(ctx context.Context), onLost func()) error {
	if opts.Namespace == "" || opts.Name == "" || opts.Identity == "" {
		return fmt.Errorf("leader election: namespace, name and identity are required (got %q, %q, %q)", opts.Namespace, opts.Name, opts.Identity)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Name},
		Client:     c.Clientset.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
		Labels:     map[string]string{"app.kubernetes.io/name": "gitaso"},
	}
	var led atomic.Bool
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            opts.Namespace + "/" + opts.Name,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				led.Store(true)
				onLead(lctx)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	le.Run(ctx) // returns when ctx ends or, once leading, when a renewal fails
	if ctx.Err() != nil {
		return nil
	}
	if led.Load() {
		if onLost != nil {
			onLost()
		}
		return fmt.Errorf("%w: lease %s/%s not renewed within %s", ErrLeadershipLost, opts.Namespace, opts.Name, opts.RenewDeadline)
	}
	return nil
}

// LeaderURL returns the advertise URL of the Lease's holder (see
// NewIdentity). It returns ErrNoLeader when the Lease does not exist or is
// not held. It does not judge whether the holder is alive: a holder killed
// a moment ago is named until a candidate takes its Lease over.
func (c *Cluster) LeaderURL(ctx context.Context, namespace, name string) (string, error) {
	l, err := c.Clientset.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: lease %s/%s does not exist", ErrNoLeader, namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("read lease %s/%s: %w", namespace, name, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("%w: lease %s/%s", ErrNoLeader, namespace, name)
	}
	holder := *l.Spec.HolderIdentity
	u := IdentityURL(holder)
	if u == "" {
		return "", fmt.Errorf("lease %s/%s: holder %q names no advertise URL (want <host>_<id>@<url>)", namespace, name, holder)
	}
	return u, nil
}
