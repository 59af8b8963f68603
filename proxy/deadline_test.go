package proxy

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// The watchdog's two deadlines on the fake clock: bytes keep the idle one
// off, not the first event's; content ends the first event's; each cuts
// the upstream request with errStalled and says which it was.
func TestWatchdogDeadlines(t *testing.T) {
	type step struct {
		advance time.Duration
		read    bool // a read that returned bytes, after the advance
		content bool // the first content event, after the advance
	}
	for _, c := range []struct {
		name        string
		first, idle time.Duration
		steps       []step
		want        stallKind // after the last step
	}{
		{"bytes keep the idle deadline off", 0, 150 * time.Second,
			[]step{{advance: 100 * time.Second, read: true}, {advance: 100 * time.Second, read: true}, {advance: 149 * time.Second}}, notStalled},
		{"a silence of idle_timeout cuts", 0, 150 * time.Second,
			[]step{{advance: 100 * time.Second, read: true}, {advance: 150 * time.Second}}, stalledIdle},
		{"pings do not put off the first event's deadline", 120 * time.Second, 150 * time.Second,
			[]step{{advance: 60 * time.Second, read: true}, {advance: 60 * time.Second, read: true}}, stalledFirst},
		{"content ends the first event's deadline", 120 * time.Second, 150 * time.Second,
			[]step{{advance: 60 * time.Second, read: true, content: true}, {advance: 149 * time.Second}}, notStalled},
		{"before content, the idle deadline still holds", 120 * time.Second, 30 * time.Second,
			[]step{{advance: 30 * time.Second}}, stalledIdle},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			w := watch(clk, http.NoBody, cancel, c.first, c.idle)
			for _, s := range c.steps {
				clk.Advance(s.advance)
				if s.read {
					w.read()
				}
				if s.content {
					w.gotContent()
				}
			}
			if got := w.stalled(); got != c.want {
				t.Fatalf("stalled %d, want %d (%q)", got, c.want, w.reason())
			}
			if cut := errors.Is(context.Cause(ctx), errStalled); cut != (c.want != notStalled) {
				t.Fatalf("upstream request cut: %v, want %v", cut, c.want != notStalled)
			}
			w.stop()
			clk.Advance(time.Hour)
			if c.want == notStalled && w.stalled() != notStalled {
				t.Fatal("a stopped watch cut the request")
			}
		})
	}
	if watch(clock.NewFake(epoch), http.NoBody, func(error) {}, 0, 0) != nil {
		t.Fatal("no deadline set, yet a watchdog")
	}
}
