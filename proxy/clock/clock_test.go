package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeFiresInOrderOnAdvance(t *testing.T) {
	f := NewFake(epoch)
	var got []int
	f.AfterFunc(3*time.Second, func() { got = append(got, 3) })
	f.AfterFunc(1*time.Second, func() { got = append(got, 1) })
	t2 := f.NewTimer(2 * time.Second)
	f.Advance(90 * time.Second)
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("callbacks fired %v, want [1 3]", got)
	}
	select {
	case at := <-t2.C():
		if !at.Equal(epoch.Add(2 * time.Second)) {
			t.Errorf("timer fired at %v", at)
		}
	default:
		t.Fatal("channel timer did not fire")
	}
	if !f.Now().Equal(epoch.Add(90 * time.Second)) {
		t.Errorf("now = %v", f.Now())
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(epoch)
	fired := 0
	tm := f.AfterFunc(time.Second, func() { fired++ })
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop should report true once")
	}
	f.Advance(2 * time.Second)
	if fired != 0 {
		t.Fatal("stopped timer fired")
	}
	tm.Reset(time.Second)
	f.Advance(time.Second)
	if fired != 1 {
		t.Fatalf("reset timer fired %d times", fired)
	}
}

func TestSleepEndsWhenContextDoes(t *testing.T) {
	f := NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Sleep(ctx, f, time.Hour) }()
	if err := f.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Sleep = %v", err)
	}
}

func TestAdvanceToNextWaiterSkipsCallbacks(t *testing.T) {
	f := NewFake(epoch)
	cb := false
	f.AfterFunc(time.Second, func() { cb = true })
	done := make(chan error)
	go func() { done <- Sleep(context.Background(), f, 500*time.Millisecond) }()
	if err := f.AdvanceToNextWaiter(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cb {
		t.Fatal("advanced past the sleep into an unrelated callback")
	}
	if !f.Now().Equal(epoch.Add(500 * time.Millisecond)) {
		t.Errorf("now = %v", f.Now())
	}
}
