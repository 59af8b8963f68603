package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"
)

// runAB compares two subpool binaries on the number the overhead phase
// is most sensitive to, CPU per request at concurrency 32, with a bare
// ReverseProxy beside them: the same upstream, each served binary on its
// own CLI-made home with a subscriber attached, rounds in random order.
// Beside CPU it gives the concurrency-32 p99, with direct as the floor
// for the added latency, and the largest RSS seen after a round. It is for developing a change
// (go run ./bench -ab OLD -bin NEW); it writes no report.
func runAB(oldBin, newBin string, rounds int, logf func(string, ...any)) error {
	up, err := startChild("upstream", "", "")
	if err != nil {
		return err
	}
	defer up.stop()
	bare, err := startChild("bare", up.url, "")
	if err != nil {
		return err
	}
	defer bare.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct := newArm("direct", up.url, "sk-bench-direct", nil)
	arms := []*arm{newArm("bare", bare.url, "sk-bench-bare", bare)}
	for _, b := range []struct{ name, bin string }{{"old", oldBin}, {"new", newBin}} {
		s, err := startServed(ctx, b.bin, up.url, "", nil)
		if err != nil {
			return fmt.Errorf("%s: %v", b.name, err)
		}
		defer s.stop()
		arms = append(arms, newArm(b.name, s.url, s.clientKey, s))
	}
	cpu := map[string][]float64{}
	p50, p99 := map[string][]float64{}, map[string][]float64{}
	rss := map[string]int64{} // the largest RSS seen right after a round
	all := append(arms, direct)
	for _, a := range all {
		if r := a.closedLoop(8, 400, 0); r.errors > 0 {
			return fmt.Errorf("%s does not answer: %v", a.name, r.firstErr)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for r := range rounds {
		for _, i := range rng.Perm(len(all)) {
			a := all[i]
			pid := up.pid()
			if a.proc != nil {
				pid = a.proc.pid()
			}
			t0, _ := cpuTime(pid)
			res := a.closedLoop(32, 0, time.Second)
			t1, _ := cpuTime(pid)
			if res.errors > 0 {
				return fmt.Errorf("%s: %v", a.name, res.firstErr)
			}
			if a.proc != nil {
				if v, err := a.proc.rss(); err == nil {
					rss[a.name] = max(rss[a.name], v)
				}
			}
			cpu[a.name] = append(cpu[a.name], float64(t1-t0)/float64(len(res.lat))/1e3)
			p50[a.name] = append(p50[a.name], pct(res.lat, .5))
			p99[a.name] = append(p99[a.name], pct(res.lat, .99))
		}
		logf("ab round %d: CPU/request µs bare %.0f old %.0f new %.0f; c32 p99 µs direct %.0f bare %.0f old %.0f new %.0f", r+1,
			cpu["bare"][r], cpu["old"][r], cpu["new"][r], p99["direct"][r], p99["bare"][r], p99["old"][r], p99["new"][r])
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	d99 := med(p99["direct"])
	for _, a := range arms {
		logf("%-4s CPU/request median %.1f µs (%.2f× bare), c32 p50 median %.0f µs, p99 median %.0f µs (added %.2f× bare's), RSS up to %s", a.name,
			med(cpu[a.name]), med(cpu[a.name])/med(cpu["bare"]), med(p50[a.name]), med(p99[a.name]),
			(med(p99[a.name])-d99)/(med(p99["bare"])-d99), mib(rss[a.name]))
	}
	return nil
}

// abMain builds the new side unless given, then runs the comparison.
func abMain(oldBin, newBin string, rounds int) error {
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	built, err := buildOutOfRun(newBin, logf)
	if err != nil {
		return err
	}
	return runAB(oldBin, built.Path, max(rounds, 5), logf)
}
