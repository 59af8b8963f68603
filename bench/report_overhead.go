package main

import (
	"fmt"
	"sort"
	"strings"
)

// The overhead sections of docs/benchmarks.md beyond the JSON table.

type printer func(string, ...any)

func throughputTable(p printer, o *Overhead) {
	p("\n### Throughput (closed loop, req/s; p99 in ms)\n\n| arm | max req/s with p99 ≤ 10 ms | at concurrency |")
	steps := o.Throughput["direct"].Steps
	for _, s := range steps {
		p(" c=%d |", s.Conc)
	}
	p("\n|---|--:|--:|%s\n", strings.Repeat("--:|", len(steps)))
	for _, name := range []string{"direct", "bare", "subpool"} {
		t := o.Throughput[name]
		p("| %s | %.0f | %d |", name, float64(t.MaxRPS), t.AtConc)
		for _, s := range t.Steps {
			p(" %.0f (%.1f) |", float64(s.RPS), float64(s.P99us)/1000)
		}
		p("\n")
	}
}

func sseAndMemory(p printer, o *Overhead) {
	p("\n### SSE: %d × 16 B deltas every %s (µs, except gaps in ms)\n\n", sseChunks, sseInterval)
	p("TTFB is the first byte of the body; TTFT the first content delta. Frame delay is the time from the\nupstream writing a delta (its `sim_emit_unix_nano` stamp) to the client reading it. bare2, where present, is a\nsecond copy of the bare proxy in the same waves: how far two identical proxies land apart on this machine.\n")
	p("\"After the start\" leaves out each stream's first %d gaps, which share the machine with the opening of the\nwave's other streams; the stalls in brackets are those among the first %d.\n\n", startGaps, startGaps)
	p("| streams | arm | TTFB p50 | TTFT p50 | TTFT p99 | gap p50 | gap p99 | gap p99 after the start | frame delay p50 | frame delay p99 | frames | stalls > 40 ms (at the start) |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, k := range sortedSSE(o) {
		for _, name := range []string{"direct", "bare", "bare2", "subpool"} {
			s, ok := o.SSE[k][name]
			if !ok {
				continue
			}
			steady := "–" // results from before the figure
			if len(s.Gap99SteadyRounds) > 0 {
				steady = fmt.Sprintf("%.3f", float64(s.Gap99Steady)/1000)
			}
			p("| %s | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %s | %.0f | %.0f | %d/%d | %d (%d) |\n", strings.TrimPrefix(k, "n"), name,
				float64(s.TTFB50), float64(s.TTFT50), float64(s.TTFT99), float64(s.Gap50)/1000, float64(s.Gap99)/1000, steady,
				float64(s.Delay50), float64(s.Delay99), s.Frames, s.Expected, s.Stalls, s.StartStalls)
		}
	}
	p("\n### Memory\n\n| | bare | subpool |\n|---|--:|--:|\n")
	mb, ms := o.Memory["bare"], o.Memory["subpool"]
	p("| RSS at start (subpool: 2 keys, the subscriber attached), before any request | %s | %s |\n", mib(mb.IdleRSS), mib(ms.IdleRSS))
	p("| RSS before the streams: a process started for the round, idle a second (no forced GC: the served binary has no hook for one) | %s | %s |\n", mib(mb.Base), mib(ms.Base))
	p("| peak RSS with %d slow streams open | %s | %s |\n", ms.Streams, mib(mb.Peak), mib(ms.Peak))
	p("| per stream (median of rounds) | %s | %s |\n", kib(mb.PerStream), kib(ms.PerStream))
	if ms.After > 0 {
		p("| a minute after the last round's streams ended | | %s |\n", mib(ms.After))
	}
	if mb.AfterJSON > 0 && ms.AfterJSON > 0 {
		p("| RSS right after the JSON rounds (concurrency 1 and 32, 256 KiB bodies), on the processes that served them | %s | %s |\n", mib(mb.AfterJSON), mib(ms.AfterJSON))
	}
	if u := ms.Upload; u != nil {
		p("| then a %d MB chunked upload past max_body (%s), answered %d: RSS before, at its peak, %d s after | | %s, %s, %s |\n",
			u.Bytes/1e6, mib(u.MaxBody), u.Status, u.Settle, mib(u.Before), mib(u.Peak), mib(u.After))
	}
	if s := o.ServedIdle; s != nil {
		p("\n`subpool serve` at start: %s anonymous (heap, stacks), %s file-backed (the binary's and shared libraries' pages).\n",
			mib(s.Anon), mib(s.File))
	}
}

// gcSweepSection tables the collector settings -gc tried: CPU beside RSS.
func gcSweepSection(p printer, sw *GCSweep) {
	p("\n### Collector settings: CPU beside RSS\n\n")
	p("`go run ./bench -gc default,100,…` (%s%s, %d rounds): one `subpool serve` per setting, GOGC and GOMEMLIMIT in its\n", sw.Date, revNote(sw.Rev), sw.Rounds)
	p("environment (tuneGC leaves a set one alone), beside the bare proxy, %s. CPU is /proc/PID/stat over the\n", sw.Load)
	p("concurrency-32 loops; GC CPU the collector's own account of its cycles in them (GODEBUG=gctrace=1), the part the\n")
	p("settings change. Ratios are taken round by round against the bare proxy of the same round; medians, with the lowest\n")
	p("and highest round. The bare proxy: CPU %.0f µs per request, RSS %s.\n\n", float64(sw.Bare.CPU), mib(sw.Bare.RSS))
	p("| setting | CPU per request | × bare (lowest–highest) | GC CPU per request (lowest–highest) | RSS after | × bare (lowest–highest) | |\n")
	p("|---|--:|--:|--:|--:|--:|---|\n")
	for _, r := range sw.Rows {
		mark := ""
		switch {
		case r.Chosen:
			mark = "**chosen**: RSS ≤ 1.5× bare at the least GC CPU"
		case float64(r.RSSRatio) <= float64(sw.RSSGoal):
			mark = "RSS ≤ 1.5× bare"
		}
		p("| %s | %.0f µs | %.2f× (%.2f–%.2f) | %.1f µs (%.1f–%.1f) | %s | %.2f× (%.2f–%.2f) | %s |\n", r.Setting,
			float64(r.CPU), float64(r.CPURatio), float64(r.CPULo), float64(r.CPUHi), float64(r.GCCPU), float64(r.GCCPULo), float64(r.GCCPUHi),
			mib(r.RSS), float64(r.RSSRatio), float64(r.RSSLo), float64(r.RSSHi), mark)
	}
	var least, own *GCRow
	for i, r := range sw.Rows {
		if least == nil || r.RSS < least.RSS {
			least = &sw.Rows[i]
		}
		if r.Setting == (GCSetting{}) {
			own = &sw.Rows[i]
		}
	}
	chosen := false
	for _, r := range sw.Rows {
		chosen = chosen || r.Chosen
	}
	if !chosen && least != nil {
		p("\nNo setting tried holds RSS ≤ %.1f× bare. The least RSS, %s with %s, cost %.1f µs of collector CPU per request",
			float64(sw.RSSGoal), mib(least.RSS), least.Setting, float64(least.GCCPU))
		if own != nil {
			p(" against %.1f µs for serve's own (%s)", float64(own.GCCPU), mib(own.RSS))
		}
		p(": the rest of the RSS is the binary's code, touched once it has served, and the live heap, not the collector.\n")
	}
}

func revNote(rev string) string {
	if rev == "" {
		return ""
	}
	return ", the binary at " + rev
}

// servedDetail shows system calls and the CPU profiles, bare beside
// subpool.
func servedDetail(p printer, r *Results, o *Overhead) {
	if len(o.Syscalls) > 0 {
		b, s := o.Syscalls["bare"], o.Syscalls["subpool"]
		p("\n### System calls per request\n\n`strace -c -f -p PID` on each proxy over %d sequential small JSON requests (concurrency 1). futex is a\n", s.Requests)
		p("thread parked or woken (a goroutine hand-off that found no running thread), nanosleep the runtime's spinning\nwait; strace slows each call, so only counts are read.\n\n")
		p("| syscall | bare | subpool |\n|---|--:|--:|\n")
		names := map[string]bool{"futex": true, "nanosleep": true}
		for n := range b.Top {
			names[n] = true
		}
		for n := range s.Top {
			names[n] = true
		}
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		// Names are sorted first so that calls with equal counts keep one order.
		sort.Strings(ns)
		sort.SliceStable(ns, func(i, j int) bool { return s.Top[ns[i]]+b.Top[ns[i]] > s.Top[ns[j]]+b.Top[ns[j]] })
		for _, n := range ns {
			p("| %s | %.1f | %.1f |\n", n, b.Top[n], s.Top[n])
		}
		p("| **all** | %.1f | %.1f |\n", b.Total, s.Total)
	}
	if len(o.Profiles) > 0 {
		p("\n### CPU profile under load\n\n`perf record -e cpu-clock -g -p PID` for 3 s of the concurrency-32 loop, on each proxy; `perf report\n")
		p("--sort symbol`, functions over 0.5 %% of samples. Flat is the function's own share, cum includes what it calls.\n")
		p("The files are in `bench/out/` (`perf report -i bench/out/subpool.perf.data`).\n")
		profTables(p, o.Profiles["bare"], o.Profiles["subpool"], []string{"flat", "cum"})
		if b, ok := o.Profiles["bare-n256"]; ok {
			s := o.Profiles["subpool-n256"]
			p("\n#### Under 256 streams\n\nThe same, for two waves of 256 streams (64 deltas at 20 ms each) on each proxy: where the time of the\n")
			p("256-stream rows goes, per chunk (the relay's reads, writes and flushes) and per request.\n")
			profTables(p, b, s, []string{"flat", "cum"})
			if len(s.Own) > 0 {
				var rows []string
				for _, r := range s.Own[:min(len(s.Own), 16)] {
					rows = append(rows, fmt.Sprintf("`%s` %.1f %%", strings.TrimPrefix(r.Func, "github.com/subpool/subpool/"), r.Pct))
				}
				p("\nsubpool's own functions under 256 streams, cum: %s.\n", strings.Join(rows, ", "))
			}
		}
	}
	if pr, ok := o.Profiles["subpool"]; ok && len(pr.Own) > 0 {
		var rows []string
		for _, r := range pr.Own[:min(len(pr.Own), 24)] {
			rows = append(rows, fmt.Sprintf("`%s` %.1f %%", strings.TrimPrefix(r.Func, "github.com/subpool/subpool/"), r.Pct))
		}
		p("\nsubpool's own functions, the event websocket, JSON encoding and the history database, cum (share of samples\nincluding callees; nested, so they do not add up): %s.\n", strings.Join(rows, ", "))
		beforeAfter(p, loadBefore(beforeFile), pr, float64(o.CPU["subpool"]), float64(o.CPU["bare"]))
	}
	for _, w := range o.Warnings {
		p("\nWarning: %s\n", w)
	}
	p("\n")
}

// profTables sets two perf profiles side by side, one table per kind.
func profTables(p printer, b, s Prof, kinds []string) {
	for _, kind := range kinds {
		p("\n| %s: bare (%d samples) | %% | subpool (%d samples) | %% |\n|---|--:|---|--:|\n", kind, b.Samples, s.Samples)
		br, sr := b.Flat, s.Flat
		if kind == "cum" {
			br, sr = b.Cum, s.Cum
		}
		for i := range max(len(br), len(sr)) {
			var c [4]string
			if i < len(br) {
				c[0], c[1] = "`"+br[i].Func+"`", fmt.Sprintf("%.1f", br[i].Pct)
			}
			if i < len(sr) {
				c[2], c[3] = "`"+sr[i].Func+"`", fmt.Sprintf("%.1f", sr[i].Pct)
			}
			p("| %s | %s | %s | %s |\n", c[0], c[1], c[2], c[3])
		}
	}
}

// spreadTable shows each overhead target's value in every run.
func spreadTable(p printer, r *Results) {
	p("## Spread over runs\n\nEach overhead target's judged value in each of the %d runs (ratios ×, differences µs, RSS MiB), and the\nvalue it is judged on: for the added JSON latency and the SSE time to first token and gap, the rounds of all runs\npooled (a p99 over three rounds moves by a millisecond at concurrency 32 here, and the added latency is the\ndifference of two such numbers), except the 256-stream gap when a -streams series is there, judged on that\nseries; for lost frames and stalls, the worst run; for the others, the median of the runs.\nThe runs' median is beside it for every target, met or not by that reading too.\n\n", len(r.Repeats)+1)
	p("| target | goal |")
	for i := range len(r.Repeats) + 1 {
		p(" run %d |", i+1)
	}
	p(" runs' median | judged | |\n|---|---|%s--:|--:|---|\n", strings.Repeat("--:|", len(r.Repeats)+1))
	for _, t := range r.Targets {
		if t.Group != "overhead" || len(t.Runs) == 0 {
			continue
		}
		p("| %s | %s |", t.What, t.Goal)
		for i := range len(r.Repeats) + 1 {
			if i < len(t.Runs) {
				p(" %s |", formatFloat(float64(t.Runs[i])))
			} else {
				p(" |")
			}
		}
		var vs []float64
		for _, v := range t.Runs {
			vs = append(vs, float64(v))
		}
		m := median(vs)
		mark := "**missed**"
		if t.Met {
			mark = "met"
		}
		if t.ID == "sse-gap-n256" && r.Streams != nil {
			mark += " (judged on the -streams series)"
		}
		if t.meets(m) != t.Met {
			mark += fmt.Sprintf(" (the runs' median: %s)", map[bool]string{true: "met", false: "missed"}[t.meets(m)])
		}
		p(" %s | %s | %s |\n", formatFloat(m), formatFloat(float64(t.Value)), mark)
	}
	p("\n")
}
