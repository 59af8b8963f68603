package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/subpool/subpool/bench/goodput"
)

// Target is one line of the targets table.
type Target struct {
	ID       string `json:"id"`
	Group    string `json:"group"`
	What     string `json:"what"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	// Source: "brief" for the targets, "§6" for the extra ones
	// from the performance notes' proposed benchmark.
	Source string `json:"source"`
	Skip   bool   `json:"skipped,omitempty"`
	// Unresolved, when set, says why the row is reported but not judged:
	// the bench cannot tell its bound from this machine's noise.
	Unresolved string `json:"unresolved,omitempty"`
	// Value is the judged number (a ratio, a difference in µs, a count)
	// and Limit the goal's bound: met when Value ≤ Limit, or ≥ with AtLeast.
	// With repeated runs, Value is the median of the runs' and Runs each.
	Value   num   `json:"value"`
	Limit   num   `json:"limit"`
	AtLeast bool  `json:"at_least,omitempty"`
	Runs    []num `json:"runs,omitempty"`
}

func (t Target) meets(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if t.AtLeast {
		return v >= float64(t.Limit)
	}
	return v <= float64(t.Limit)
}

func us(v num) string {
	f := float64(v)
	if math.IsNaN(f) {
		return "n/a"
	}
	if math.Abs(f) >= 1000 {
		return fmt.Sprintf("%.2f ms", f/1000)
	}
	return fmt.Sprintf("%.0f µs", f)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func kib(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10)) }

func judge(r *Results) []Target {
	var ts []Target
	if r.Overhead != nil {
		ts = append(ts, judgeRuns(r.Overhead, r.Repeats)...)
	}
	for i := range ts {
		if why, ok := unresolved[ts[i].ID]; ok {
			ts[i].Unresolved = why
		}
	}
	ts = append(ts, judgeMicro(r.Micro)...)
	ts = append(ts, judgeHistory(r.History)...)
	return append(ts, judgeGoodput(r.Goodput)...)
}

// unresolved are the rows the bench cannot resolve on its machine, by id,
// with the reason the report prints once. At 256 streams the two bare
// proxies, the same code, land as far apart on the gap p99 as subpool
// lands from them, so a 50 µs bound is below the noise (docs/benchmarks.md).
var unresolved = map[string]string{
	"sse-gap-n256": "not a target, two bare proxies land as far apart as the bound here",
}

// judgeRuns judges the overhead targets over every run of the phase: the
// latencies on the rounds of all runs pooled, the counts on the worst run,
// each other target on the median of the runs.
func judgeRuns(first *Overhead, repeats []*Overhead) []Target {
	var ts []Target
	add := func(t Target) { ts = append(ts, t) }
	runs := [][]Target{judgeOverhead(first)}
	for _, o := range repeats {
		runs = append(runs, judgeOverhead(o))
	}
	all := append([]*Overhead{first}, repeats...)
	pooled := map[string]Target{}
	jsonRounds, sseRounds := 0, 0
	if len(all) > 1 {
		var po *Overhead
		po, jsonRounds, sseRounds = pooledOverhead(all)
		for _, t := range judgeOverhead(po) {
			pooled[t.ID] = t
		}
	}
	for _, t := range aggregate(runs) {
		if p, ok := pooled[t.ID]; ok && pooledID(t.ID) {
			// Judged on the rounds pooled; Runs keeps each run's value.
			n := jsonRounds
			if strings.HasPrefix(t.ID, "sse-") {
				n = sseRounds
			}
			t.Value, t.Met, t.Unresolved = p.Value, p.Met, p.Unresolved
			t.Measured = fmt.Sprintf("%s, %d rounds of %d runs pooled", p.Measured, n, len(all))
		}
		if countedID(t.ID) && len(t.Runs) > 1 {
			// A count must hold in every run: judged on the worst.
			for _, run := range runs {
				for _, w := range run {
					if w.ID == t.ID && w.Value >= t.Value {
						t.Value, t.Measured = w.Value, w.Measured
					}
				}
			}
			t.Measured += fmt.Sprintf(", the worst of %d runs", len(t.Runs))
			t.Met = t.meets(float64(t.Value))
		}
		add(t)
	}
	return ts
}

func judgeMicro(ms []Micro) []Target {
	var ts []Target
	add := func(t Target) { ts = append(ts, t) }
	if pk, rw, ok := microPair(ms); ok {
		ns, allocs := float64(pk.NsOp+rw.NsOp), float64(pk.AllocsOp+rw.AllocsOp)
		add(Target{ID: "micro-pick-rewrite", Group: "micro", Source: "§6",
			What: "pick a credential among 8 + rewrite the request headers", Goal: "≤ 1 µs, 0 allocs",
			Measured: fmt.Sprintf("%.0f ns + %.0f ns, %.0f + %.0f allocs", float64(pk.NsOp), float64(rw.NsOp), float64(pk.AllocsOp), float64(rw.AllocsOp)),
			Met:      ns <= 1000 && allocs == 0})
	}
	if s, b, ok := microRoundTrip(ms); ok {
		add(Target{ID: "micro-roundtrip", Group: "micro", Source: "§6",
			What: "whole request in memory vs bare ReverseProxy", Goal: "≤ 1.2 × bare ns/op",
			Measured: fmt.Sprintf("%.1f µs vs %.1f µs → %.2f×", float64(s.NsOp)/1000, float64(b.NsOp)/1000, ratio(float64(s.NsOp), float64(b.NsOp))),
			Met:      ratio(float64(s.NsOp), float64(b.NsOp)) <= 1.2})
	}
	return ts
}

func judgeGoodput(gs []goodput.Result) []Target {
	var ts []Target
	add := func(t Target) { ts = append(ts, t) }
	gp := map[string]map[string]goodput.Result{}
	for _, g := range gs {
		if gp[g.Scenario] == nil {
			gp[g.Scenario] = map[string]goodput.Result{}
		}
		gp[g.Scenario][g.Strategy] = g
	}
	if len(gp) == 0 {
		return nil
	}
	wasted, where := 0, []string{}
	for _, sc := range goodput.Scenarios(1) {
		if s, ok := gp[sc.Name]["subpool"]; ok && sc.Announce {
			wasted += s.Wasted
			if s.Wasted > 0 {
				where = append(where, fmt.Sprintf("%s %d", sc.Name, s.Wasted))
			}
		}
	}
	m := fmt.Sprintf("%d", wasted)
	if len(where) > 0 {
		m += " (" + strings.Join(where, ", ") + ")"
	}
	add(Target{ID: "wasted", Group: "goodput", Source: "brief",
		What: "wasted calls (into an announced cooldown), every scenario that announces resets",
		Goal: "0", Measured: m, Met: wasted == 0})
	if s, ok := gp["outage"]["subpool"]; ok {
		// Issue 27 settled the outage rule: fast recovery wins, so
		// amplification counts over the whole run (the probes that find
		// the end early are what a run with an outage pays), and the first
		// success comes within 2 s of the end.
		add(Target{ID: "amplification-outage", Group: "goodput", Source: "issue 27",
			What:     "load amplification over a 30 min run with a 60 s pool-wide bare 429",
			Goal:     "≤ 1.1×",
			Measured: fmt.Sprintf("%.2f× (requests arriving during the outage %.2f×)", s.Amplification, s.OutageAmplification),
			Met:      s.Amplification <= 1.1})
		add(Target{ID: "outage-recovery", Group: "goodput", Source: "issue 27",
			What: "pool-wide 429 for W s: first success after it ends", Goal: "≤ 2 s",
			Measured: fmt.Sprintf("%.1f s", s.Recovery), Met: s.Recovery <= 2})
	}
	// Issue 27: every scenario serves at least 0.98 of the oracle with at
	// most 10 % of its attempts refused 429; the steady ones at 1.5× load
	// keep §6's 5 % and the brief's balance.
	for _, sc := range goodput.Scenarios(1) {
		name := sc.Name
		s, ok := gp[name]["subpool"]
		if !ok {
			continue
		}
		steady := strings.HasPrefix(name, "steady-")
		add(Target{ID: "goodput-" + name, Group: "goodput", Source: "issue 27",
			What: "goodput vs the oracle, " + name, Goal: fmt.Sprintf("≥ %.2f", goodput.MinVsOracle),
			Measured: fmt.Sprintf("%.3f (%.3f vs %.3f)", s.VsOracle, s.Goodput, gp[name]["oracle"].Goodput),
			Met:      s.VsOracle >= goodput.MinVsOracle})
		if steady {
			add(Target{ID: "balance-" + name, Group: "goodput", Source: "brief",
				What: "per-credential balance (max/min successes), " + name, Goal: "≤ 1.2",
				Measured: fmt.Sprintf("%.2f", s.Balance), Met: s.Balance <= 1.2})
		}
		share := s.Share429()
		limit, src := goodput.Max429Share, "issue 27"
		if steady {
			limit, src = 0.05, "§6"
		}
		add(Target{ID: "429-share-" + name, Group: "goodput", Source: src,
			What: "upstream 429s as a share of attempts, " + name, Goal: fmt.Sprintf("≤ %.0f %%", 100*limit),
			Measured: fmt.Sprintf("%.1f %% (%d of %d; amplification %.2f×)", 100*share, s.Refused429, s.Calls, s.Amplification),
			Met:      share <= limit})
	}
	return ts
}

func microNamed(ms []Micro, name string) (Micro, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Micro{}, false
}

func microPair(ms []Micro) (pick, rewrite Micro, ok bool) {
	pick, ok1 := microNamed(ms, "Pick8")
	rewrite, ok2 := microNamed(ms, "Rewrite")
	return pick, rewrite, ok1 && ok2
}

func microRoundTrip(ms []Micro) (sub, bare Micro, ok bool) {
	sub, ok1 := microNamed(ms, "RoundTrip/arm=subpool")
	bare, ok2 := microNamed(ms, "RoundTrip/arm=bare")
	return sub, bare, ok1 && ok2
}

func sortedSSE(o *Overhead) []string {
	var ks []string
	for _, n := range []int{1, 64, 256} {
		if _, ok := o.SSE[fmt.Sprintf("n%d", n)]; ok {
			ks = append(ks, fmt.Sprintf("n%d", n))
		}
	}
	return ks
}

// pastTheFloor says why a row bound to the bare proxy's figure + limit
// cannot be judged in this run: its second bare proxy, the same code,
// landed further than limit from the first (d), so the bound is inside
// the noise. "" when it is not, or the run had no second bare proxy.
func pastTheFloor(x map[string]SSE, d num, limit float64) string {
	if _, ok := x["bare2"]; !ok || math.Abs(float64(d)) <= limit {
		return ""
	}
	return fmt.Sprintf("the two bare proxies land %.0f µs apart in this run, past the bound", math.Abs(float64(d)))
}

// twoBares says how far a second bare proxy landed from the first (d),
// when the run had one: the same code, so d is this machine's noise on
// the figure beside it.
func twoBares(x map[string]SSE, d num) string {
	if _, ok := x["bare2"]; !ok {
		return ""
	}
	return fmt.Sprintf("; a second bare proxy %+.0f µs", float64(d))
}

// judgeOverhead judges one run of the served binary against the bare
// proxy of the same run.
func judgeOverhead(o *Overhead) []Target {
	var ts []Target
	add := func(t Target) {
		t.Met = t.meets(float64(t.Value))
		ts = append(ts, t)
	}
	for _, c := range []string{"c1", "c32"} {
		a := o.Added[c]
		conc := strings.TrimPrefix(c, "c")
		add(Target{ID: "added-p50-" + c, Group: "overhead", Source: "brief",
			What:     "added latency p50, JSON, concurrency " + conc,
			Goal:     "P ≤ 1.2 × B",
			Measured: fmt.Sprintf("P %s, B %s → %.2f×", us(a.P50), us(a.B50), float64(a.Ratio50)),
			Value:    a.Ratio50, Limit: 1.2})
		add(Target{ID: "added-p99-" + c, Group: "overhead", Source: "brief",
			What:     "added latency p99, JSON, concurrency " + conc,
			Goal:     "P ≤ 1.5 × B",
			Measured: fmt.Sprintf("P %s, B %s → %.2f×", us(a.P99), us(a.B99), float64(a.Ratio99)),
			Value:    a.Ratio99, Limit: 1.5})
	}
	c1 := o.Added["c1"]
	add(Target{ID: "added-p99-abs", Group: "overhead", Source: "§6",
		What: "added latency p99, JSON, concurrency 1, absolute", Goal: "P ≤ 0.5 ms",
		Measured: us(c1.P99), Value: c1.P99, Limit: 500})
	if c := o.CPU; c != nil {
		r := ratio(float64(c["subpool"]), float64(c["bare"]))
		add(Target{ID: "cpu", Group: "overhead", Source: "brief",
			What:     "CPU per request at concurrency 32 (/proc/PID/stat utime + stime)",
			Goal:     "≤ 1.1 × bare",
			Measured: fmt.Sprintf("%.0f vs %.0f µs → %.2f×", float64(c["subpool"]), float64(c["bare"]), r),
			Value:    num(r), Limit: 1.1})
	}
	if o.Throughput != nil {
		b, s := o.Throughput["bare"], o.Throughput["subpool"]
		r := ratio(float64(s.MaxRPS), float64(b.MaxRPS))
		add(Target{ID: "throughput", Group: "overhead", Source: "§6",
			What:     "max throughput at p99 ≤ 10 ms",
			Goal:     "≥ 0.8 × bare",
			Measured: fmt.Sprintf("%.0f vs %.0f req/s → %.2f×", float64(s.MaxRPS), float64(b.MaxRPS), r),
			Value:    num(r), Limit: 0.8, AtLeast: true})
	}
	ts = append(ts, judgeSSE(o)...)
	return append(ts, judgeMemory(o)...)
}

// judgeSSE judges the streaming rows, each against the bare proxy of the
// same waves, with the second bare proxy's distance beside it.
func judgeSSE(o *Overhead) []Target {
	var ts []Target
	add := func(t Target) {
		t.Met = t.meets(float64(t.Value))
		ts = append(ts, t)
	}
	for _, k := range sortedSSE(o) {
		n := strings.TrimPrefix(k, "n")
		sa, x := o.SSEAdded[k], o.SSE[k]
		d := x["subpool"].TTFT50 - x["bare"].TTFT50
		add(Target{ID: "sse-ttft-" + k, Group: "overhead", Source: "brief",
			What:     "SSE time to first token (first content delta), p50, " + n + " streams",
			Goal:     "≤ bare + 100 µs",
			Measured: fmt.Sprintf("bare %s, subpool %s over direct → %+.0f µs%s", us(sa.TTFTBare), us(sa.TTFTSub), float64(d), twoBares(x, x["bare2"].TTFT50-x["bare"].TTFT50)),
			Value:    d, Limit: 100, Unresolved: pastTheFloor(x, x["bare2"].TTFT50-x["bare"].TTFT50, 100)})
		g := x["subpool"].Gap99 - x["bare"].Gap99
		add(Target{ID: "sse-gap-" + k, Group: "overhead", Source: "brief",
			What:     "SSE inter-chunk gap p99, " + n + " streams",
			Goal:     "≤ bare + 50 µs",
			Measured: fmt.Sprintf("bare %s, subpool %s → %+.0f µs%s", us(x["bare"].Gap99), us(x["subpool"].Gap99), float64(g), twoBares(x, x["bare2"].Gap99-x["bare"].Gap99)),
			Value:    g, Limit: 50, Unresolved: pastTheFloor(x, x["bare2"].Gap99-x["bare"].Gap99, 50)})
		sub := x["subpool"]
		add(Target{ID: "sse-frames-" + k, Group: "overhead", Source: "brief",
			What:     "SSE frames delivered 1:1, " + n + " streams",
			Goal:     "every frame, no broken stream",
			Measured: fmt.Sprintf("%d of %d frames, %d errors (bare %d of %d, %d errors)", sub.Frames, sub.Expected, sub.Errors, x["bare"].Frames, x["bare"].Expected, x["bare"].Errors),
			Value:    num(sub.Expected - sub.Frames + sub.Errors), Limit: 0})
		if k == "n256" {
			add(Target{ID: "sse-stalls-" + k, Group: "overhead", Source: "§6",
				What:     "SSE gaps over 2× the interval, 256 streams",
				Goal:     "0",
				Measured: fmt.Sprintf("subpool %d, bare %d, direct %d", sub.Stalls, x["bare"].Stalls, x["direct"].Stalls),
				Value:    num(sub.Stalls), Limit: 0})
		}
	}
	return ts
}

// judgeMemory judges the RSS rows: per stream, idle, after loads and
// around an upload past max_body.
func judgeMemory(o *Overhead) []Target {
	var ts []Target
	add := func(t Target) {
		t.Met = t.meets(float64(t.Value))
		ts = append(ts, t)
	}
	mb, ms := o.Memory["bare"], o.Memory["subpool"]
	r := ratio(float64(ms.PerStream), float64(mb.PerStream))
	add(Target{ID: "per-stream", Group: "overhead", Source: "brief",
		What:     fmt.Sprintf("memory per concurrent stream (%d slow streams)", ms.Streams),
		Goal:     "≤ 1.1 × bare",
		Measured: fmt.Sprintf("%s vs %s → %.2f×", kib(ms.PerStream), kib(mb.PerStream), r),
		Value:    num(r), Limit: 1.1})
	if s := o.ServedIdle; s != nil {
		add(Target{ID: "idle-rss", Group: "overhead", Source: "brief",
			What:     "idle RSS of `subpool serve` (2 keys, a subscriber attached, before any request)",
			Goal:     "≤ 15 MiB (headless build)",
			Measured: fmt.Sprintf("%s (anonymous %s, file-backed %s; bare %s)", mib(s.Total), mib(s.Anon), mib(s.File), mib(mb.IdleRSS)),
			Value:    num(float64(s.Total) / (1 << 20)), Limit: 15})
	}
	if ms.AfterJSON > 0 && mb.AfterJSON > 0 {
		// Issue 27: the memory held after a load, against the bare proxy's.
		r := float64(ms.AfterJSON) / float64(mb.AfterJSON)
		add(Target{ID: "rss-after-c32", Group: "overhead", Source: "issue 27",
			What:     "RSS right after the JSON rounds (concurrency 1 and 32, 256 KiB bodies)",
			Goal:     "≤ 1.5 × bare",
			Measured: fmt.Sprintf("%s vs %s → %.2f×", mib(ms.AfterJSON), mib(mb.AfterJSON), r),
			Value:    num(r), Limit: 1.5})
	}
	if u := ms.Upload; u != nil && u.Before > 0 {
		// Issue 27: a chunked body past max_body is refused without
		// holding more than the limit, and what it held goes back.
		add(Target{ID: "upload-413", Group: "overhead", Source: "issue 27",
			What:     fmt.Sprintf("a %d MB chunked upload past max_body (%s) is refused", u.Bytes/1e6, mib(u.MaxBody)),
			Goal:     "413",
			Measured: fmt.Sprintf("%d", u.Status),
			Value:    num(math.Abs(float64(u.Status - 413))), Limit: 0})
		rise := float64(u.Peak-u.Before) / float64(u.MaxBody)
		add(Target{ID: "upload-peak", Group: "overhead", Source: "issue 27",
			What:     "subpool's RSS rise to its peak during that upload",
			Goal:     "≤ 1.25 × max_body",
			Measured: fmt.Sprintf("%s → %s, %.2f× max_body", mib(u.Before), mib(u.Peak), rise),
			Value:    num(rise), Limit: 1.25})
		r := float64(u.After) / float64(u.Before)
		add(Target{ID: "upload-after", Group: "overhead", Source: "issue 27",
			What:     fmt.Sprintf("subpool's RSS %d s after that upload's 413", u.Settle),
			Goal:     "≤ 1.25 × its RSS before it",
			Measured: fmt.Sprintf("%s after, %s before → %.2f×", mib(u.After), mib(u.Before), r),
			Value:    num(r), Limit: 1.25})
	}
	if ms.After > 0 && ms.Base > 0 {
		// Issue 27: after a load ends, memory goes back.
		r := float64(ms.After) / float64(ms.Base)
		m := fmt.Sprintf("%s after, %s idle before, %s at the peak → %.2f×", mib(ms.After), mib(ms.Base), mib(ms.Peak), r)
		if mb.After > 0 {
			m += fmt.Sprintf(" (bare %s after, %s idle, %s at the peak)", mib(mb.After), mib(mb.Base), mib(mb.Peak))
		}
		add(Target{ID: "rss-after-load", Group: "overhead", Source: "issue 27",
			What:     fmt.Sprintf("RSS of `subpool serve` a minute after %d slow streams ended", ms.Streams),
			Goal:     "≤ 2 × its idle RSS before them",
			Measured: m, Value: num(r), Limit: 2})
	}
	return ts
}

// pooledID reports the targets that, over repeated runs, are judged on
// every run's rounds pooled: those measured round by round as a
// difference between two arms. A run's value is a difference of medians
// over three rounds, and at concurrency 32 or 64 streams on two shared
// cores those medians move by a millisecond; the median of the runs'
// ratios of added p99 swung from 1.0× to 2.7×. All rounds pooled, as one
// run of that many rounds would take them, is the steadier estimate of
// the same thing.
func pooledID(id string) bool {
	for _, p := range []string{"added-", "sse-ttft-", "sse-gap-"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// countedID reports the targets that count failures (frames lost, stalls):
// over repeated runs they are judged on the worst run, since a median
// would hide a run that broke a stream.
func countedID(id string) bool {
	return strings.HasPrefix(id, "sse-frames-") || strings.HasPrefix(id, "sse-stalls-")
}

// pooledOverhead is runs[0] with its per-round figures replaced by every
// run's rounds pooled: the JSON latency of each arm the median over every
// kept round of its per-round p50 and p99, an SSE arm's TTFT p50 and gap
// p99 the median over every round. It also says how many JSON and SSE
// rounds went in.
func pooledOverhead(runs []*Overhead) (po *Overhead, jsonRounds, sseRounds int) {
	type pair = [2]float64
	byCase := map[string]map[string][]pair{}
	for _, o := range runs {
		void := map[int]bool{}
		for _, v := range o.Voided {
			void[v] = true
		}
		seen := map[int]bool{}
		for _, rv := range o.JSONRounds {
			if void[rv.Round] {
				continue
			}
			if !seen[rv.Round] {
				seen[rv.Round] = true
				jsonRounds++
			}
			if byCase[rv.Case] == nil {
				byCase[rv.Case] = map[string][]pair{}
			}
			byCase[rv.Case][rv.Arm] = append(byCase[rv.Case][rv.Arm], pair{float64(rv.P50), float64(rv.P99)})
		}
	}
	cp := *runs[0]
	po = &cp
	po.Added = map[string]Added{}
	for c, byArm := range byCase {
		m := map[string][2]float64{}
		for arm, ps := range byArm {
			var p50, p99 []float64
			for _, p := range ps {
				p50, p99 = append(p50, p[0]), append(p99, p[1])
			}
			m[arm] = [2]float64{median(p50), median(p99)}
		}
		po.Added[c] = addedOf(m)
	}
	po.SSE, po.SSEAdded = map[string]map[string]SSE{}, map[string]SSEAdded{}
	for k, byArm := range runs[0].SSE {
		po.SSE[k] = map[string]SSE{}
		for arm, s := range byArm {
			var ttft, gap, steady []float64
			for _, o := range runs {
				x := o.SSE[k][arm]
				for i := range x.TTFT50Rounds {
					ttft, gap = append(ttft, float64(x.TTFT50Rounds[i])), append(gap, float64(x.Gap99Rounds[i]))
				}
				for _, v := range x.Gap99SteadyRounds {
					steady = append(steady, float64(v))
				}
			}
			s.TTFT50, s.Gap99 = num(median(ttft)), num(median(gap))
			if len(steady) > 0 {
				s.Gap99Steady = num(median(steady))
			}
			po.SSE[k][arm] = s
		}
		po.SSEAdded[k] = sseAddedOf(po.SSE[k])
	}
	for _, o := range runs {
		for _, byArm := range o.SSE {
			sseRounds += len(byArm["direct"].TTFT50Rounds)
			break
		}
	}
	return po, jsonRounds, sseRounds
}

// aggregate folds repeated runs' targets into one each: judged on the
// median value, described by the run that gave it, with every run's
// value kept to show the spread.
func aggregate(runs [][]Target) []Target {
	if len(runs) == 1 {
		return runs[0]
	}
	var order []string
	byID := map[string][]Target{}
	for _, run := range runs {
		for _, t := range run {
			if _, ok := byID[t.ID]; !ok {
				order = append(order, t.ID)
			}
			byID[t.ID] = append(byID[t.ID], t)
		}
	}
	var out []Target
	for _, id := range order {
		ts := byID[id]
		var vs []float64
		for _, t := range ts {
			vs = append(vs, float64(t.Value))
		}
		m := median(vs)
		best := ts[0]
		for _, t := range ts {
			if math.Abs(float64(t.Value)-m) < math.Abs(float64(best.Value)-m) {
				best = t
			}
		}
		t := best
		t.Value = num(m)
		t.Runs = nil
		for _, x := range ts {
			t.Runs = append(t.Runs, x.Value)
		}
		t.Met = t.meets(m)
		out = append(out, t)
	}
	return out
}
