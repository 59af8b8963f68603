package pool

import (
	"slices"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// Reset-aware selection: among credentials with headroom whose windows
// name their resets, the soonest reset goes first (its unused quota is
// lost then); headroom breaks ties and rules when resets are unknown;
// affinity still comes first, least recent use alternates among equals.
func TestPickPrefersSoonestReset(t *testing.T) {
	at := func(d time.Duration) *time.Time { r := t0.Add(d); return &r }
	win := func(used float64, reset *time.Time) *api.Utilization {
		return &api.Utilization{FiveHour: &api.Window{Used: used, ResetsAt: reset}}
	}
	tests := []struct {
		name string
		util map[string]*api.Utilization
		want []string // successive picks, each released at once
	}{
		{"soonest reset wins over more headroom",
			map[string]*api.Utilization{"A": win(0.1, at(4*time.Hour)), "B": win(0.6, at(time.Hour)), "C": win(0.1, at(3*time.Hour))},
			[]string{"B", "B", "B"}},
		{"resets within 5 minutes are one; headroom decides",
			map[string]*api.Utilization{"A": win(0.5, at(time.Hour)), "B": win(0.2, at(time.Hour+4*time.Minute)), "C": win(0, at(3*time.Hour))},
			[]string{"B", "B"}},
		{"equal resets and headroom alternate",
			map[string]*api.Utilization{"A": win(0.5, at(time.Hour)), "B": win(0.52, at(time.Hour)), "C": win(0, at(2*time.Hour))},
			[]string{"A", "B", "A"}},
		{"a full window gives way although it resets first",
			map[string]*api.Utilization{"A": win(1, at(10*time.Minute)), "B": win(0.9, at(time.Hour)), "C": win(0, nil)},
			[]string{"B", "B"}},
		{"the soonest of either window counts",
			map[string]*api.Utilization{
				"A": {FiveHour: &api.Window{Used: 0.2, ResetsAt: at(4 * time.Hour)}},
				"B": {FiveHour: &api.Window{Used: 0.2, ResetsAt: at(4 * time.Hour)}, SevenDay: &api.Window{Used: 0.3, ResetsAt: at(time.Hour)}},
				"C": win(0, nil)},
			[]string{"B"}},
		{"a reset that has passed is no reset",
			map[string]*api.Utilization{"A": win(0.9, at(-time.Minute)), "B": win(0.3, at(time.Hour)), "C": win(0.5, at(2*time.Hour))},
			[]string{"B"}},
		{"unknown resets: most headroom, then alternation",
			map[string]*api.Utilization{"A": win(0.5, nil), "B": win(0.1, nil), "C": win(0.12, nil)},
			[]string{"B", "C", "B"}},
		// Its usage is learnt only by asking: a key at 90% must not take
		// every request while a new one was never tried.
		{"a credential never heard from is tried",
			map[string]*api.Utilization{"A": nil, "B": win(0.7, at(4*time.Hour)), "C": nil},
			[]string{"A", "C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{}, "A", "B", "C")
			for id, u := range tt.util {
				f.p.SetUtilization(id, u)
			}
			var got []string
			for range tt.want {
				got = append(got, f.pick("m"))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("picks %v, want %v", got, tt.want)
			}
		})
	}
}

// Affinity stays ahead of the soonest reset: moving a conversation would
// break its prompt cache.
func TestAffinityBeforeSoonestReset(t *testing.T) {
	f := newFixture(t, Config{}, "A", "B")
	req := PickRequest{Provider: "anthropic", Model: "m", Affinity: "conv"}
	l, err := f.p.Pick(req)
	if err != nil || l.Credential.ID != "A" {
		t.Fatalf("first pick %v %v", l, err)
	}
	l.Release()
	soon, later := t0.Add(time.Hour), t0.Add(4*time.Hour)
	f.p.SetUtilization("A", &api.Utilization{FiveHour: &api.Window{Used: 0.1, ResetsAt: &later}})
	f.p.SetUtilization("B", &api.Utilization{FiveHour: &api.Window{Used: 0.5, ResetsAt: &soon}})
	if l, _ := f.p.Pick(req); l.Credential.ID != "A" {
		t.Fatalf("affinity moved to %s", l.Credential.ID)
	}
	if got := f.pick("m"); got != "B" {
		t.Fatalf("without affinity picked %s, want B (resets soonest)", got)
	}
}
