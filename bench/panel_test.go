package main

import (
	"testing"
	"time"
)

// The judgment of an arm: growth is measured from the end of the first
// minute, so start-up does not count, and a tray that died early misses.
func TestPanelArmJudgment(t *testing.T) {
	samples := func(rss ...int64) []PanelSample {
		var out []PanelSample
		for i, r := range rss {
			out = append(out, PanelSample{At: float64(30 * i), RSS: r << 20})
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		arm              PanelArm
		atWarmup, growth int64 // MiB
		met              bool
	}{
		{"flat after a start-up climb", PanelArm{Samples: samples(100, 150, 160, 161, 163, 160)}, 160, 3, true},
		{"growing", PanelArm{Samples: samples(100, 150, 160, 170, 180, 190)}, 160, 30, false},
		{"too big", PanelArm{Samples: samples(190, 205, 205, 205, 205, 205)}, 205, 0, false},
		{"died", PanelArm{Samples: samples(100, 150, 160), Err: "the tray ended"}, 160, 0, false},
	} {
		if got := tc.arm.AtWarmup() >> 20; got != tc.atWarmup {
			t.Errorf("%s: at the minute %d MiB, want %d", tc.name, got, tc.atWarmup)
		}
		if got := tc.arm.Growth() >> 20; got != tc.growth {
			t.Errorf("%s: growth %d MiB, want %d", tc.name, got, tc.growth)
		}
		if got := tc.arm.Met(150 * time.Second); got != tc.met {
			t.Errorf("%s: met %v", tc.name, got)
		}
	}
}
