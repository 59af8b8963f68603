package main

import (
	"fmt"
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
		bare := ""
		if mb.After > 0 {
			bare = mib(mb.After)
		}
		p("| a minute after the last round's streams ended | %s | %s |\n", bare, mib(ms.After))
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

// warnings prints what went wrong in the overhead phase.
func warnings(p printer, o *Overhead) {
	for _, w := range o.Warnings {
		p("\nWarning: %s\n", w)
	}
	p("\n")
}

// spreadTable shows each overhead target's value in every run.
func spreadTable(p printer, r *Results) {
	p("## Spread over runs\n\nEach overhead target's judged value in each of the %d runs (ratios ×, differences µs, RSS MiB), and the\nvalue it is judged on: for the added JSON latency and the SSE time to first token and gap, the rounds of all runs\npooled (a p99 over three rounds moves by a millisecond at concurrency 32 here, and the added latency is the\ndifference of two such numbers); for lost frames and stalls, the worst run; for the others, the median of the runs.\nThe runs' median is beside it for every target, met or not by that reading too.\n\n", len(r.Repeats)+1)
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
		mark := verdict(t)
		if t.Unresolved != "" {
			mark = "not judged" // the targets table says why
		}
		if t.meets(m) != t.Met {
			mark += fmt.Sprintf(" (the runs' median: %s)", map[bool]string{true: "met", false: "missed"}[t.meets(m)])
		}
		p(" %s | %s | %s |\n", formatFloat(m), formatFloat(float64(t.Value)), mark)
	}
	p("\n")
}
