package pool

import (
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// The tray learns of a reserve's hold from the event stream alone: the
// credential_updated that says so carries when the hold ends (Until, as
// ReservedUntil in status), and so does a new reserve that holds at once.
func TestReserveHoldEventCarriesItsEnd(t *testing.T) {
	f := subFixture(t, UsageConfig{Reserve: 10}, "a", "b")
	f.p.SetQuota("a", claudeQuota(t, f.now(), 0.91, 2*time.Hour, 0.3, week))
	held := f.rec.take(api.EventCredentialUpdated)
	end := f.now().Add(2 * time.Hour).Truncate(time.Second)
	if len(held) != 1 || held[0].Until == nil || !held[0].Until.Equal(end) {
		t.Fatalf("hold events %+v, want one until %v", held, end)
	}

	f.p.SetQuota("b", claudeQuota(t, f.now(), 0.85, 3*time.Hour, 0.3, week))
	f.rec.take()
	if err := f.p.SetReserve("b", 20); err != nil {
		t.Fatal(err)
	}
	evs := f.rec.take(api.EventCredentialUpdated)
	var until *time.Time
	for _, e := range evs {
		if e.Reason == "reserve 20%" {
			until = e.Until
		}
	}
	if until == nil || !until.Equal(f.now().Add(3*time.Hour).Truncate(time.Second)) {
		t.Fatalf("reserve events %+v: no \"reserve 20%%\" with the hold's end", evs)
	}
}
