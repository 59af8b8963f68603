package events

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ids(evs []api.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestEmitStampsIDAndTime(t *testing.T) {
	clk := clock.NewFake(t0.In(time.FixedZone("X", 3600)))
	h := NewHub(clk, 0)
	h.Emit(api.Event{Type: api.EventRotated})
	clk.Advance(time.Second)
	given := time.Date(2020, 1, 1, 9, 0, 0, 0, time.FixedZone("Y", 9*3600))
	h.Emit(api.Event{Type: api.EventRotated, Time: given})
	h.Emit(api.Event{Type: api.EventRotated, ID: 99}) // a caller's id is overwritten

	evs, ok := h.Since(0)
	if !ok || len(evs) != 3 {
		t.Fatalf("Since(0) = %d events, %v", len(evs), ok)
	}
	if got := ids(evs); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("ids = %v, want [1 2 3]", got)
	}
	if !evs[0].Time.Equal(t0) || evs[0].Time.Location() != time.UTC {
		t.Errorf("first time = %v, want %v in UTC", evs[0].Time, t0)
	}
	if !evs[1].Time.Equal(given) || evs[1].Time.Location() != time.UTC {
		t.Errorf("given time %v came out as %v, want the same instant in UTC", given, evs[1].Time)
	}
	if h.LastID() != 3 {
		t.Errorf("LastID = %d", h.LastID())
	}
}

func TestSinceRing(t *testing.T) {
	h := NewHub(clock.NewFake(t0), 4)
	if evs, ok := h.Since(0); !ok || evs == nil || len(evs) != 0 {
		t.Fatalf("empty hub: Since(0) = %v, %v; want empty non-nil, true", evs, ok)
	}
	for range 6 {
		h.Emit(api.Event{Type: api.EventRequestFinished})
	}
	// Ring of 4 after 6 events holds ids 3..6.
	tests := []struct {
		since uint64
		want  string
		ok    bool
	}{
		{6, "[]", true},
		{5, "[6]", true},
		{2, "[3 4 5 6]", true}, // exactly what the ring holds
		{1, "[]", false},       // id 2 is gone
		{0, "[]", false},
		{7, "[]", false}, // from a previous process
	}
	for _, tt := range tests {
		evs, ok := h.Since(tt.since)
		if ok != tt.ok || fmt.Sprint(ids(evs)) != tt.want {
			t.Errorf("Since(%d) = %v, %v; want %s, %v", tt.since, ids(evs), ok, tt.want, tt.ok)
		}
	}
}

func TestSubscribeReplayThenLive(t *testing.T) {
	h := NewHub(clock.NewFake(t0), 4)
	for range 5 {
		h.Emit(api.Event{Type: api.EventRotated})
	}
	// The replay (3 events) is longer than the queue (1): it must not count
	// as falling behind.
	s, replayed := h.Subscribe(2, 1)
	defer s.Close()
	if !replayed || s.Start() != 5 {
		t.Fatalf("replayed=%v start=%d, want true 5", replayed, s.Start())
	}
	h.Emit(api.Event{Type: api.EventRotated})
	var got []uint64
	for range 4 {
		got = append(got, (<-s.C()).ID)
	}
	if fmt.Sprint(got) != "[3 4 5 6]" {
		t.Errorf("got %v, want [3 4 5 6]", got)
	}
	if s.Dropped() {
		t.Error("dropped")
	}

	// Too old (the ring now holds 3..6), or 0: no replay, the caller sends a snapshot as of Start.
	for _, since := range []uint64{0, 1} {
		s, replayed := h.Subscribe(since, 4)
		if replayed || s.Start() != 6 || len(s.C()) != 0 {
			t.Errorf("Subscribe(%d): replayed=%v start=%d queued=%d", since, replayed, s.Start(), len(s.C()))
		}
		s.Close()
	}
}

func TestResumeFromZero(t *testing.T) {
	h := NewHub(clock.NewFake(t0), 4)
	// A snapshot taken before any event stands for id 0.
	if s, replayed := h.Resume(0, 0); !replayed || s.Start() != 0 {
		t.Errorf("Resume(0) on an empty hub: replayed=%v start=%d", replayed, s.Start())
	}
	h.Emit(api.Event{Type: api.EventRotated})
	h.Emit(api.Event{Type: api.EventRotated})
	s, replayed := h.Resume(0, 0)
	if !replayed || len(s.C()) != 2 {
		t.Errorf("Resume(0) with ids 1..2 kept: replayed=%v queued=%d", replayed, len(s.C()))
	}
	if _, replayed := h.Subscribe(0, 0); replayed {
		t.Error("Subscribe(0) replayed: a new reader needs a snapshot")
	}
	for range 3 {
		h.Emit(api.Event{Type: api.EventRotated})
	}
	if _, replayed := h.Resume(0, 0); replayed {
		t.Error("Resume(0) replayed after id 1 left the ring")
	}
}

// A reader resubscribing while events keep coming must see every id after
// its since exactly once: the replay and the registration are one step.
// Its small queue gets it dropped now and then, and it resumes like a
// websocket client would.
func TestSubscribeNoGapUnderConcurrentEmit(t *testing.T) {
	const total = 5000
	h := NewHub(clock.NewFake(t0), 1<<15)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range total {
			h.Emit(api.Event{Type: api.EventRequestFinished})
			runtime.Gosched()
		}
	})
	var last uint64
	subs := 0
	for last < total {
		s, replayed := h.Subscribe(last, 16)
		subs++
		if last > 0 && !replayed {
			t.Fatalf("since %d not replayed", last)
		}
		if last == 0 {
			last = s.Start()
		}
		for i := 0; i < 20 && last < total; i++ {
			e, ok := <-s.C()
			if !ok {
				break // dropped: resume from last
			}
			if e.ID != last+1 {
				t.Fatalf("after %d got %d", last, e.ID)
			}
			last = e.ID
		}
		s.Close()
	}
	wg.Wait()
	t.Logf("%d subscriptions", subs)
}

func TestSlowSubscriberDropped(t *testing.T) {
	h := NewHub(clock.NewFake(t0), 0)
	slow, _ := h.Subscribe(0, 3)
	fast, _ := h.Subscribe(0, 3)
	for range 3 {
		h.Emit(api.Event{Type: api.EventRotated})
		<-fast.C()
	}
	select {
	case <-slow.Done():
		t.Fatal("dropped with room left")
	default:
	}
	// The fourth event does not fit: Emit returns (this test would hang
	// otherwise) and the slow one is gone.
	h.Emit(api.Event{Type: api.EventRotated})
	<-slow.Done()
	if !slow.Dropped() || fast.Dropped() {
		t.Fatalf("slow dropped=%v fast dropped=%v", slow.Dropped(), fast.Dropped())
	}
	// Dropping slow, subscribed first, did not skip fast for that event.
	select {
	case e := <-fast.C():
		if e.ID != 4 {
			t.Errorf("fast got id %d, want 4", e.ID)
		}
	default:
		t.Error("fast did not get id 4")
	}
	// What was queued before the drop is still readable, then C is closed.
	var got []uint64
	for e := range slow.C() {
		got = append(got, e.ID)
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("slow drained %v, want [1 2 3]", got)
	}
	if n, d := h.Stats(); n != 1 || d != 1 {
		t.Errorf("Stats = %d, %d; want 1, 1", n, d)
	}
	for range 10_000 {
		h.Emit(api.Event{Type: api.EventRotated}) // nobody reads fast now either
	}
	if n, d := h.Stats(); n != 0 || d != 2 {
		t.Errorf("Stats = %d, %d; want 0, 2", n, d)
	}
}

func TestCloseIdempotent(t *testing.T) {
	h := NewHub(clock.NewFake(t0), 0)
	s, _ := h.Subscribe(0, 0)
	s.Close()
	s.Close()
	if _, ok := <-s.C(); ok {
		t.Error("C open after Close")
	}
	if s.Dropped() {
		t.Error("Close reported as a drop")
	}
	h.Emit(api.Event{Type: api.EventRotated})
	if n, d := h.Stats(); n != 0 || d != 0 {
		t.Errorf("Stats = %d, %d; want 0, 0", n, d)
	}
}

func TestConcurrentEmitIDsMonotonic(t *testing.T) {
	const writers, each = 8, 500
	h := NewHub(clock.NewFake(t0), writers*each)
	s, _ := h.Subscribe(0, writers*each)
	defer s.Close()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range each {
				h.Emit(api.Event{Type: api.EventRequestFinished, Provider: fmt.Sprint(w)})
			}
		})
	}
	wg.Wait()
	// Delivery order is id order, and ids are 1..N without gap or repeat.
	for want := uint64(1); want <= writers*each; want++ {
		if e := <-s.C(); e.ID != want {
			t.Fatalf("got id %d, want %d", e.ID, want)
		}
	}
	evs, ok := h.Since(0)
	if !ok || len(evs) != writers*each || evs[len(evs)-1].ID != writers*each {
		t.Fatalf("ring: %d events, ok=%v", len(evs), ok)
	}
}

func TestBootDiffers(t *testing.T) {
	a, b := NewHub(nil, 0), NewHub(nil, 0)
	if a.Boot() == "" || a.Boot() == b.Boot() {
		t.Errorf("boots %q and %q", a.Boot(), b.Boot())
	}
}
