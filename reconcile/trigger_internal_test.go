package reconcile

import (
	"sync"
	"testing"
)

// TestTriggerNeverLosesARefresh: one trigger is pending at most, and it is a
// refresh when any trigger it absorbed was, in whatever order they came.
func TestTriggerNeverLosesARefresh(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []bool
		want  bool
	}{
		{"poll", []bool{false}, false},
		{"polls", []bool{false, false, false}, false},
		{"refresh after a pending poll", []bool{false, true}, true},
		{"poll after a pending refresh", []bool{true, false}, true},
		{"refreshes", []bool{true, true}, true},
		{"mixed", []bool{false, false, true, false}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{trigger: make(chan bool, 1)}
			for _, c := range tc.calls {
				r.Trigger(c)
			}
			if got := <-r.trigger; got != tc.want {
				t.Errorf("pending trigger refresh = %v, want %v", got, tc.want)
			}
			select {
			case v := <-r.trigger:
				t.Errorf("a second trigger is pending: %v", v)
			default:
			}
		})
	}
}

// Concurrent callers, one of them a refresh, leave a pending refresh; the
// loop's side drains concurrently and must see it in what it drained.
func TestTriggerConcurrent(t *testing.T) {
	for range 50 {
		r := &Reconciler{trigger: make(chan bool, 1)}
		var sawRefresh bool
		stop := make(chan struct{})
		drained := make(chan struct{})
		go func() { // the loop
			defer close(drained)
			for {
				select {
				case v := <-r.trigger:
					sawRefresh = sawRefresh || v
				case <-stop:
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() { r.Trigger(i == 17) })
		}
		wg.Wait()
		close(stop)
		<-drained
		select {
		case v := <-r.trigger:
			sawRefresh = sawRefresh || v
		default:
		}
		if !sawRefresh {
			t.Fatal("a refresh was lost among concurrent polls")
		}
	}
}
