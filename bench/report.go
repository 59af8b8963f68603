package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/subpool/subpool/bench/goodput"
)

func f1(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if math.IsInf(v, 1) {
			return "∞"
		}
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

func f2(v float64) string {
	if math.IsInf(v, 1) {
		return "∞"
	}
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func f3(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}

// report renders docs/benchmarks.md.
func report(r *Results) string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	reportHead(p, r)
	targetsSection(p, r)
	if len(r.Micro) > 0 {
		microSection(p, r)
	}
	if o := r.Overhead; o != nil {
		overheadSection(p, r, o)
	}
	if r.GCSweep != nil && r.Overhead == nil {
		gcSweepSection(p, r.GCSweep)
		p("\n")
	}
	if r.Streams != nil && r.Overhead == nil {
		streamsSection(p, r.Streams, r.StreamsEarlier)
		p("\n")
	}
	if len(r.Repeats) > 0 {
		spreadTable(p, r)
	}
	historySection(p, r.History)
	panelSection(p, r)
	if len(r.Goodput) > 0 {
		goodputSection(p, r)
	}
	findingsSection(p, r)
	for _, n := range r.Notes {
		p("Note: %s\n\n", n)
	}
	p("%s", strings.TrimLeft(method, "\n"))
	return b.String()
}

// reportHead is the report's title, how to run the bench, and the machine.
func reportHead(p printer, r *Results) {
	m := r.Machine
	p("# Benchmarks\n\n")
	p("Written by `make bench` (`go run ./bench`, about %s here); the raw numbers are in\n", r.Duration)
	p("`bench/results.json`. Do not edit by hand: the next run overwrites it. The method is at the end.\n\n")
	p("```sh\n")
	for _, l := range [][2]string{
		{"make bench", "everything, a few minutes"},
		{"go run ./bench -quick", "a smaller run while developing"},
		{"go run ./bench -repeat 3", "the overhead phase three times: the spread, targets on all runs"},
		{"go run ./bench -skip overhead", "parts: micro, overhead, history, goodput, strace"},
		{"go run ./bench -profile", "also perf profiles of both proxies under load, in bench/out/"},
		{"go run ./bench -bin ./subpool", "measure this binary instead of building one"},
		{"go run ./bench -pin", "upstream on CPU 0, proxies on CPU 1 (taskset), for a quiet machine"},
		{"go run ./bench -from bench/results.json", "rewrite this report from saved results"},
		{"go test ./bench/...", "the simulator's invariants and its conformance with the proxy"},
	} {
		p("%-40s # %s\n", l[0], l[1])
	}
	p("go test -run '^$' -bench '^BenchmarkMicro' -benchmem ./proxy/ ./proxy/classify/\n```\n\n")
	p("| machine | |\n|---|---|\n")
	p("| CPU | %s |\n| cores | %d |\n| Go | %s (%s) |\n| kernel | %s |\n| date | %s |\n| load average at start | %s |\n\n",
		m.CPU, m.Cores, m.Go, m.OS, m.Kernel, m.Date, m.LoadAvg)
	if r.Overhead != nil && !r.Overhead.Pinned {
		p("The servers were not pinned to cores (`go run ./bench -pin` pins them); the box is shared, so every\n")
		p("overhead target is a ratio or a difference against the bare proxy measured in the same rounds.\n\n")
	}
}

// targetsSection tables every target with its goal, what was measured and
// whether it was met.
func targetsSection(p printer, r *Results) {
	p("## Targets\n\n")
	if bl := r.Built; bl != nil {
		rev := ""
		if bl.Rev != "" {
			rev = " at " + bl.Rev
		}
		p("**subpool** below is the built binary, `subpool serve`, as a user runs it (%s%s): a home written as a\n", bl.How, rev)
		p("user has it (`require_client_key = true`, the file keychain, two API keys added with `subpool add-key`, the\n")
		p("client key read from `subpool env shell`) and one admin websocket subscriber on `/subpool/v1/events`, as the\n")
		p("tray attaches.")
		if o := r.Overhead; o != nil {
			p(" The subscriber received %d messages during the run.", o.Events)
		}
		p("\n\n")
	}
	p("B = bare ReverseProxy − direct, P = subpool − direct (medians over interleaved rounds). Targets marked §6 come\n")
	p("from the proposed benchmark in the performance notes; the others are the issue's.")
	if len(r.Repeats) > 0 {
		p(" The overhead phase ran %d times, each with fresh processes. The added JSON latency and the SSE time to first\ntoken and gap are judged on every kept round of every run pooled, as one run of that many rounds; lost frames and\nstalls on the worst run; each other overhead target on the median of the runs' values, described by the run\nnearest it ([spread](#spread-over-runs)).", len(r.Repeats)+1)
	}
	p("\n\n")
	p("| | target | goal | measured | |\n|---|---|---|---|---|\n")
	met := 0
	for _, t := range r.Targets {
		mark := "**missed**"
		if t.Met {
			mark, met = "met", met+1
		}
		src := ""
		if t.Source == "§6" {
			src = " (§6)"
		}
		p("| %s | %s%s | %s | %s | %s |\n", t.Group, t.What, src, t.Goal, t.Measured, mark)
	}
	p("\n%d of %d met.", met, len(r.Targets))
	if missed := missedWithFindings(r); len(missed) > 0 {
		p(" Why each miss happens, what was done about it and what is left: [Findings](#findings).")
	}
	p("\n\n")
}

func microSection(p printer, r *Results) {
	p("## Micro\n\n`go test -run '^$' -bench '^BenchmarkMicro' -benchmem %s` (median of 5 runs; raw\noutput for benchstat in `bench/out/micro.txt`).\n\n", strings.Join(microPackages, " "))
	p("| benchmark | ns/op | B/op | allocs/op |\n|---|--:|--:|--:|\n")
	for _, x := range r.Micro {
		p("| %s | %s | %.0f | %.0f |\n", microTitle(x.Name), fmt.Sprintf("%.0f", float64(x.NsOp)), float64(x.BytesOp), float64(x.AllocsOp))
	}
	p("\n")
}

// overheadSection is the JSON latency table, the CPU per request and the
// in-process handler's arm, then the tables the other helpers write.
func overheadSection(p printer, r *Results, o *Overhead) {
	p("## Overhead\n\n")
	p("%d interleaved rounds, arms in random order each round; each number is the median of the rounds' values.", o.Rounds)
	if len(o.Voided) > 0 {
		p(" Rounds %v were voided (direct p99 over twice its best round).", o.Voided)
	}
	if o.Note != "" {
		p(" Note: %s.", o.Note)
	}
	p("\n\n### Small JSON request (µs)\n\n")
	p("| concurrency | direct p50 | bare p50 | subpool p50 | direct p99 | bare p99 | subpool p99 | B p50 | P p50 | P/B p50 | B p99 | P p99 | P/B p99 |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range jsonCases {
		j, a := o.JSON[c], o.Added[c]
		label := strings.TrimPrefix(c, "c")
		if c == "c1-256KiB" {
			label = "1, with 256 KiB of conversation"
		}
		p("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %s |\n", label,
			float64(j["direct"].P50), float64(j["bare"].P50), float64(j["subpool"].P50),
			float64(j["direct"].P99), float64(j["bare"].P99), float64(j["subpool"].P99),
			float64(a.B50), float64(a.P50), f2(float64(a.Ratio50)), float64(a.B99), float64(a.P99), f2(float64(a.Ratio99)))
	}
	if c := o.CPU; c != nil {
		p("\nCPU per request at concurrency 32 (from /proc/PID/stat): bare proxy %.0f µs, subpool %.0f µs; the upstream %.0f µs.\n",
			float64(c["bare"]), float64(c["subpool"]), float64(o.UpstreamCPU))
	}
	if h := o.Handler; h != nil {
		p("\n**Micro arm, not what users run:** the in-process handler (`proxy.New` with a pool of %d keys, the classifier\n", benchCredCount)
		p("and a hub with one drained subscriber, in a bench child; no admin API, state file or CLI-made home) ran in the\n")
		p("same JSON rounds. Added over direct (µs): ")
		var parts []string
		for _, c := range jsonCases {
			a := o.HandlerAdded[c]
			parts = append(parts, fmt.Sprintf("%s p50 %.0f / p99 %.0f", c, float64(a.P50), float64(a.P99)))
		}
		p("%s; CPU per request at concurrency 32: %.0f µs. The served binary's figures minus these are what the\nbinary adds around the engine.\n", strings.Join(parts, ", "), float64(o.HandlerCPU))
	}
	if o.Throughput != nil {
		throughputTable(p, o)
	}
	sseAndMemory(p, o)
	if r.Streams != nil {
		streamsSection(p, r.Streams, r.StreamsEarlier)
	}
	if r.GCSweep != nil {
		gcSweepSection(p, r.GCSweep)
	}
	servedDetail(p, r, o)
}

// goodputSection describes the strategies and tables each scenario.
func goodputSection(p printer, r *Results) {
	p("## Goodput\n\n")
	p("Virtual clock, no HTTP: `bench/goodput` plays each scenario's arrivals against each strategy with its own\n")
	p("fresh simulated upstream. Goodput = share of client requests served; amplification = upstream calls ÷ client\n")
	p("requests; wasted = calls into a cooldown the upstream had announced; balance = max/min successes per live key;\n")
	p("times are from arrival to the last byte of served requests (virtual seconds).\n\n")
	for _, st := range goodput.Strategies() {
		p("- **%s**: %s\n", st.Name, st.Title)
	}
	p("\n")
	if prs := goodput.Proposals(); len(prs) > 0 {
		p("Rows in italics are *what if*: subpool with a change the findings propose, played on the same real pool and\n")
		p("classifier to measure it before it is written; no target is judged on them.\n\n")
		for _, pr := range prs {
			p("- *%s*: %s\n", pr.Name, pr.Title)
		}
		p("\n")
	}
	by := map[string][]goodput.Result{}
	for _, g := range r.Goodput {
		by[g.Scenario] = append(by[g.Scenario], g)
	}
	for _, sc := range goodput.Scenarios(1) {
		rs := by[sc.Name]
		if len(rs) == 0 {
			continue
		}
		p("### %s\n\n%s. %d requests.\n\n", sc.Name, sc.Title, rs[0].Requests)
		outage := len(sc.Outages) > 0
		p("| strategy | goodput | vs oracle | calls | amplification | wasted | 429 | 529 | 401 | balance | p50 s | p99 s |")
		if outage {
			p(" outage: amplification | served | p99 s | recovery s |")
		}
		p("\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		if outage {
			p("--:|--:|--:|--:|")
		}
		p("\n")
		for _, g := range rs {
			name := g.Strategy
			if g.WhatIf {
				name = "*" + name + "*"
			}
			p("| %s | %s | %s | %d | %s | %d | %d | %d | %d | %s | %s | %s |", name, f3(g.Goodput), f3(g.VsOracle),
				g.Calls, f2(g.Amplification), g.Wasted, g.Refused429, g.Refused529, g.Refused401, f2(g.Balance), f1(g.P50), f1(g.P99))
			if outage {
				p(" %s | %s | %s | %s |", f2(g.OutageAmplification), f3(g.OutageServed), f1(g.OutageP99), f1(g.Recovery))
			}
			p("\n")
		}
		p("\n")
	}
}

// findingsSection prints the findings that explain this run's misses, then
// the observations whose text is not empty.
func findingsSection(p printer, r *Results) {
	if missed := missedWithFindings(r); len(missed) > 0 {
		p("## Findings\n\n")
		p("Each missed target: the code responsible, what was done about it and what is left or proposed (the bench\n")
		p("does not change the proxy). The bench prints the findings that match this run's misses.\n\n")
		for _, f := range missed {
			p("### %s\n\nMisses: %s.\n\n%s\n\n", f.title, strings.Join(f.targets, "; "), strings.TrimSpace(f.text(r)))
		}
	}
	if len(observations) > 0 {
		p("## Observations\n\nNot targets, but worth knowing when reading the numbers.\n\n")
		for _, f := range observations {
			if t := strings.TrimSpace(f.text(r)); t != "" {
				p("### %s\n\n%s\n\n", f.title, t)
			}
		}
	}
}

func microTitle(name string) string {
	switch {
	case name == "Classify429":
		return "classify one verdict (Anthropic 429 with retry-after and limit headers)"
	case name == "Pick8":
		return "pick a credential among 8 (Pick + Release)"
	case name == "Rewrite":
		return "rewrite: outbound header build, API key (Claude Code's 19 headers)"
	case name == "RewriteOAuth":
		return "rewrite: outbound header build, OAuth (bearer + beta merge)"
	case strings.HasPrefix(name, "Inspect/"):
		return "body inspection (model, stream, session), " + strings.TrimPrefix(name, "Inspect/")
	case name == "ReadBody":
		return "read a 260 KiB body once (bounded), to resend it"
	case strings.HasPrefix(name, "RoundTrip/"):
		return "whole request in memory, " + strings.TrimPrefix(name, "RoundTrip/")
	}
	return name
}

const method = `
## Method

- **Micro**: the ` + "`BenchmarkMicro*`" + ` functions in ` + "`proxy/micro_bench_test.go`" + ` and
  ` + "`proxy/classify/micro_bench_test.go`" + `, run by ` + "`go test -bench`" + ` from the harness and parsed, so they are
  the same code a developer runs by hand (and feeds to benchstat).
- **Overhead**: three arms in the same run: direct to ` + "`internal/sim`" + `, through a bare ` + "`httputil.ReverseProxy`" + `
  (Rewrite + SetURL, FlushInterval −1, a BufferPool, subpool's transport tuning) — the floor — and through the
  **built binary**: ` + "`go build -o bench/out/subpool .`" + ` (headless first; the tray build with cgo if that fails; the last
  commit from ` + "`git archive HEAD`" + ` if the working tree does not compile; ` + "`-bin`" + ` to give one), on a temporary home
  written as a user has it (` + "`config.toml`" + ` with ` + "`require_client_key = true`" + `, ` + "`[keychain] backend = \"file\"`" + ` and
  ` + "`[providers.anthropic] base_url`" + ` at the sim; two keys added by ` + "`subpool add-key anthropic --label kN`" + ` from
  stdin; the client key from ` + "`subpool env shell`" + `), started as ` + "`subpool serve --home H --listen 127.0.0.1:0`" + `, with
  one websocket subscriber on ` + "`/subpool/v1/events`" + ` (Bearer = the home's ` + "`admin-token`" + `) reading every message, as
  the tray does. The upstream and the bare proxy run in child processes of the bench binary (re-executed with
  -child), so each RSS is per arm; the load generator is the parent. The in-process handler (` + "`proxy.New`" + ` in a
  child, 4 keys, a drained hub subscriber) joins the JSON rounds as a labelled micro arm only. Every round runs the
  arms in random order; each reported value is the median over rounds of that round's percentile (rounds whose
  direct p99 at concurrency 1 is over twice the best round's are voided). JSON: 400 sequential requests, then 1 s
  closed loop at 32, in four slices per round. CPU per request: utime + stime from /proc/PID/stat over the
  concurrency-32 loops. Throughput: closed loops at rising concurrency; the best rate whose p99 stays ≤ 10 ms.
  SSE: waves of 1, 64 and 256 streams whose starts are spread over one interval, with a second bare proxy (bare2)
  among the arms to show how far two identical proxies land apart; per-frame delay from the sim's
  emit stamp; frames counted. Memory: VmRSS from /proc; each round starts each proxy afresh (the served binary
  with its home and subscriber, as above), waits a second, takes that RSS as the base, opens 500 slow streams
  (40 deltas at 100 ms) and samples the peak RSS every 100 ms; per stream = (peak − base) ÷ streams, no forced GC
  in either arm. A fresh process, because one that served the phases before keeps the heap they grew, and the
  streams then fill it without raising the RSS. Idle RSS: the
  served binary one second after its subscriber attached, before any request. System calls: ` + "`strace -c -f -p`" + `
  on each proxy over 2000 sequential requests. Profile (` + "`-profile`" + `): ` + "`perf record -e cpu-clock -g -p`" + ` on each
  proxy for 3 s at concurrency 32 (no hook in the binary needed). ` + "`-repeat N`" + ` runs the whole phase N times with
  fresh processes (the later runs without throughput, the handler arm, strace and the profile, and with 3 rounds);
  the added JSON latency and SSE TTFT and gap are then judged on the kept rounds of all runs pooled, lost frames and
  stalls on the worst run, each other overhead target on the median of the runs.
- **History** (` + "`bench/history.go`" + `): two served binaries as above, one with ` + "`[history] enabled = false`" + `, one
  upstream; 5 rounds (arms in random order) of 300 sequential JSON requests and 0.8 s closed loop at 32; noise is the
  off arm's own spread over rounds. Then 10 s open loop at 1,000 requests/s (each sent on its 1 ms slot whatever the
  others do) through each server and direct; the history's rows for the run are read back through
  ` + "`GET /subpool/v1/usage?since=`" + ` once the writer has committed.
- **Goodput**: ` + "`bench/goodput`" + `, a discrete-event simulation on a virtual clock. subpool's strategy is the real
  ` + "`proxy/pool`" + ` and ` + "`proxy/classify`" + ` deciding with ` + "`proxy/policy`" + `, the proxy's own function; a
  conformance test replays scripted traffic through the real proxy (on a fake clock, in memory) and through the
  simulator and requires the same upstream calls. The upstream's answers have the real services' shapes (checked
  against ` + "`internal/sim`" + `'s by a test). Quotas are fixed windows per key, staggered across keys.
- No test asserts on wall-clock time; ` + "`make test`" + ` runs only the simulator's small invariant and conformance tests.
`

// finding explains a miss; it is printed when any of its targets missed.
type finding struct {
	title   string
	ids     []string // target id prefixes
	text    func(r *Results) string
	targets []string // filled: the missed targets it explains
}

func missedWithFindings(r *Results) []finding {
	var out []finding
	for _, f := range findings {
		f.targets = nil
		for _, t := range r.Targets {
			if t.Met {
				continue
			}
			for _, id := range f.ids {
				if strings.HasPrefix(t.ID, id) {
					f.targets = append(f.targets, t.What+" ("+t.Measured+")")
					break
				}
			}
		}
		if len(f.targets) > 0 {
			out = append(out, f)
		}
	}
	return out
}
