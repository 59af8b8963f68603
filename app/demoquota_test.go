package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"math"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// The demo's subscriptions report windows that fill as they are used, so
// the tray's bars move: with the other Claude credentials paused, each
// answer by claude-max reads its 5h window higher, until the demo's
// reserve holds it back. Requests go one at a time, without the script's
// failures, so each one is seen land.
func TestDemoWindowsFillWithUse(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	for _, label := range []string{"claude-pro", "anthropic-key"} {
		if err := d.srv.Pause(ctx, d.ids[label]); err != nil {
			t.Fatal(err)
		}
	}
	id := d.ids["claude-max"]
	w := demoWindows["claude-max"]
	ask := func() string {
		return d.send(ctx, "http://"+d.srv.Addr()+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
	}
	var seen []float64
	for range 2 {
		if by := ask(); by != id {
			t.Fatalf("answered by %q, not claude-max", by)
		}
		used, ok := fiveHour(daemonStatus(d.srv), id)
		if !ok {
			t.Fatal("claude-max reports no 5h window after an answer")
		}
		seen = append(seen, used)
	}
	if seen[0] <= w.FiveHour || math.Abs(seen[1]-seen[0]-w.PerFiveHour) > 1e-9 {
		t.Errorf("5h window went %v from %v: not %v per answer", seen, w.FiveHour, w.PerFiveHour)
	}

	// Filled to the demo's reserve, claude-max is held back until its 5h
	// window resets; the request is served elsewhere (ChatGPT, by
	// fallback), not by it.
	for i := 0; seen[len(seen)-1] < 0.9-1e-9; i++ {
		if i == 5 {
			t.Fatalf("5h window never reached the reserve: %v", seen)
		}
		ask()
		used, _ := fiveHour(daemonStatus(d.srv), id)
		seen = append(seen, used)
	}
	c := credential(daemonStatus(d.srv), id)
	if c == nil || c.Reserve != 10 || c.ReservedUntil == nil {
		t.Fatalf("at %v: not held by the reserve: %+v", seen, c)
	}
	if by := ask(); by == id {
		t.Errorf("claude-max answered while its reserve holds it")
	}
}

func credential(s api.Status, id string) *api.CredentialStatus {
	for _, p := range s.Providers {
		for i := range p.Credentials {
			if p.Credentials[i].ID == id {
				return &p.Credentials[i]
			}
		}
	}
	return nil
}

func fiveHour(s api.Status, id string) (float64, bool) {
	for _, p := range s.Providers {
		for _, c := range p.Credentials {
			if c.ID != id || c.Usage == nil {
				continue
			}
			for _, w := range c.Usage.Windows {
				if w.Name == "5h" {
					return w.Used, true
				}
			}
			if c.Usage.FiveHour != nil {
				return c.Usage.FiveHour.Used, true
			}
		}
	}
	return 0, false
}
