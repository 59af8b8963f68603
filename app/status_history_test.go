package app

import (
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

// Status says how many history rows were dropped (zero while the writer
// keeps up), so a full queue shows without opening the database; with
// history off it says nothing.
func TestStatusCarriesHistoryDrops(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	startHome(t, home, &logBuf{})
	st := listStatusJSON(t, home)
	if st.History == nil || st.History.Dropped != 0 {
		t.Fatalf("history status %+v", st.History)
	}

	home, _ = newHome(t, up, "[history]\nenabled = false\n")
	startHome(t, home, &logBuf{})
	if st := listStatusJSON(t, home); st.History != nil {
		t.Fatalf("history off, status %+v", st.History)
	}
}
