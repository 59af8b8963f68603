package history

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// The tray's stacked chart reads "hour,credential": one row per hour and
// credential, its tokens only that credential's.
func TestUsageSplitByCredential(t *testing.T) {
	d := open(t, Options{Clock: clock.NewFake(t0)})
	seed(t, d)
	rep, err := d.UsageSince(context.Background(), t0.Add(-time.Hour), api.ByHour+","+api.ByCredential)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, fmt.Sprintf("%s/%s/%s:%d", r.Key, r.Credential, r.Label, r.Requests))
	}
	// seed: rows at t0 (12:00) and one to four minutes before (11:56..11:59).
	want := "[2026-11-20 11:00/key1/work:1 2026-11-20 11:00/key2/:1 2026-11-20 11:00/sub1/max:2 2026-11-20 12:00/key1/work:1]"
	if fmt.Sprint(got) != want {
		t.Errorf("rows\n got %s\nwant %s", got, want)
	}
	if rep.Total.Requests != 5 || rep.By != "hour,credential" {
		t.Errorf("total %d by %q", rep.Total.Requests, rep.By)
	}
	for _, r := range rep.Rows {
		if r.Key == "2026-11-20 12:00" && r.InputTokens != 1_000_000 {
			t.Errorf("12:00 key1 input = %d, want only its own row's 1M", r.InputTokens)
		}
	}
	for _, bad := range []string{"credential,credential", "hour,model", "hour,"} {
		if _, err := d.Usage(context.Background(), "24h", bad); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("by %q: %v, want a bad request", bad, err)
		}
	}
}
