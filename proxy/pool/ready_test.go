package pool

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A waiter wakes at the instant the pool is ready: the cooldown's own
// timer closes the channel, at the fake clock's instant of its end.
func TestWaiterWakesWhenCooldownEnds(t *testing.T) {
	f := newFixture(t, Config{}, "a")
	res := f.p.CoolDown("a", "", ScopeCredential, 10*time.Second, "429")
	ch := f.p.Changed()
	if u := f.unavailable("m"); u.NextReady != 10*time.Second || u.Probe {
		t.Fatalf("unavailable %+v, want the cooldown's 10s", u)
	}
	f.clk.Advance(10*time.Second - time.Millisecond)
	if closed(ch) {
		t.Fatal("woken before the cooldown ended")
	}
	woke := make(chan time.Time, 1)
	go func() {
		<-ch
		woke <- f.now()
	}()
	f.clk.Advance(time.Millisecond)
	if at := <-woke; !at.Equal(res.Until) {
		t.Fatalf("woke at %v, want %v", at, res.Until)
	}
	if got := f.pick("m"); got != "a" {
		t.Fatalf("pick after the wake = %s", got)
	}
}

// waiters starts n goroutines that each follow Changed's documented
// pattern once: take the channel, Pick, and on refusal wait for the
// channel and Pick again. It returns after every one has been refused and
// is waiting; wait reports how many of the second Picks succeeded.
func waiters(t *testing.T, p *Pool, n int) (wait func() int) {
	t.Helper()
	var refused, done sync.WaitGroup
	var won atomic.Int32
	refused.Add(n)
	for range n {
		done.Go(func() {
			ch := p.Changed()
			if l, err := p.Pick(PickRequest{Provider: "anthropic", Model: "m"}); err == nil {
				l.Release()
				t.Error("a waiter was served before anything changed")
				refused.Done()
				return
			}
			refused.Done()
			<-ch
			if _, err := p.Pick(PickRequest{Provider: "anthropic", Model: "m"}); err == nil {
				won.Add(1) // held: the slot stays taken
			} else if u := (*Unavailable)(nil); !errors.As(err, &u) || u.Busy != 1 {
				t.Errorf("a waiter's second Pick: %v, want busy", err)
			}
		})
	}
	refused.Wait()
	return func() int {
		done.Wait()
		return int(won.Load())
	}
}

// 100 waiters on a credential at its in-flight limit of 3: one lease
// released wakes them all, and exactly one slot's worth proceeds.
func TestOneReleaseLetsOneWaiterThrough(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 3}, "a")
	var held []*Lease
	for range 3 {
		l, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	wait := waiters(t, f.p, 100)
	held[0].Release()
	if n := wait(); n != 1 {
		t.Fatalf("%d waiters got the one freed slot", n)
	}
}

// 100 waiters behind a credential's probe after a cooldown: the probe's
// 2xx (Confirm) and release open the credential, and exactly its
// in-flight limit proceeds.
func TestConfirmedProbeLetsTheLimitThrough(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 3}, "a")
	f.p.CoolDown("a", "", ScopeCredential, time.Second, "429")
	f.clk.Advance(time.Second)
	probe, err := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	wait := waiters(t, f.p, 100)
	f.p.Confirm("a", "m")
	probe.Release()
	if n := wait(); n != 3 {
		t.Fatalf("%d waiters proceeded, want the in-flight limit, 3", n)
	}
}

// What closes the channel, and what does not: only changes that may let a
// refused Pick succeed wake waiters.
func TestChangedClosesOnReadinessOnly(t *testing.T) {
	f := newFixture(t, Config{}, "a", "b")
	f.p.Add(Credential{ID: "p", Provider: "other"})
	reset := t0.Add(time.Hour)
	steps := []struct {
		name string
		do   func()
		wake bool
	}{
		{"pick", func() { l, _ := f.p.Pick(PickRequest{Provider: "anthropic", Model: "m"}); f.held = l }, false},
		{"explain", func() { f.p.Explain(PickRequest{Provider: "anthropic", Model: "m"}) }, false},
		{"status, reason, utilization", func() {
			f.p.Status("")
			f.p.SetReason("a", "x")
			f.p.SetUtilization("a", &api.Utilization{})
		}, false},
		{"release", func() { f.held.Release() }, true},
		{"release again", func() { f.held.Release() }, false},
		{"cool down", func() { f.p.CoolDown("a", "", ScopeCredential, time.Minute, "429") }, false},
		{"pause", func() { f.p.Pause("b") }, false},
		{"park", func() { f.p.Park("b", "", api.ParkPayment, "card") }, false},
		{"resume", func() { f.p.Resume("b") }, true},
		{"unpark", func() { f.p.Unpark("b") }, true},
		{"cooldown ends", func() { f.clk.Advance(time.Minute) }, true},
		{"confirm", func() { f.p.Confirm("a", "m") }, true},
		{"record a success", func() { f.p.Record("a", true, false) }, true},
		{"record a failure", func() { f.p.Record("a", false, false) }, false},
		{"budget reported", func() { f.p.SetBudget("b", "m", 5, reset) }, true},
		{"budget spent by a pick", func() {
			f.p.SetBudget("b", "m", 1, reset)
			f.changed = f.p.Changed()
			l, _ := f.p.Acquire("b", "m")
			l.Release()
			f.changed = f.p.Changed() // the release above woke it
		}, false},
		{"spent budget resets", func() { f.clk.AdvanceTo(reset) }, true},
		{"reset", func() {
			f.p.CoolDown("a", "", ScopeCredential, time.Minute, "429")
			f.changed = f.p.Changed()
			f.p.Reset("a")
		}, true},
		{"add", func() { f.p.Add(Credential{ID: "c", Provider: "anthropic"}) }, true},
		{"remove", func() { f.p.Remove("c") }, false},
	}
	for _, s := range steps {
		f.changed = f.p.Changed()
		s.do()
		if got := closed(f.changed); got != s.wake {
			t.Errorf("%s: channel closed %v, want %v", s.name, got, s.wake)
		}
	}
}
