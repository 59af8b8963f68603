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
	machineHead(p, r)
	targetsSection(p, r)
	if len(r.Micro) > 0 {
		microSection(p, r)
	}
	if o := r.Overhead; o != nil {
		overheadSection(p, r, o)
	}
	if len(r.Repeats) > 0 {
		spreadTable(p, r)
	}
	historySection(p, r.History)
	panelSection(p, r)
	if len(r.Goodput) > 0 {
		goodputSection(p, r)
	}
	missesSection(p, r)
	for _, n := range r.Notes {
		p("Note: %s\n\n", n)
	}
	return b.String()
}

// machineHead tables the machine the run was on.
func machineHead(p printer, r *Results) {
	m := r.Machine
	p("Run of %s, %s.\n\n", m.Date, r.Duration)
	p("| machine | |\n|---|---|\n")
	p("| CPU | %s |\n| cores | %d |\n| Go | %s (%s) |\n| kernel | %s |\n| load average at start | %s |\n\n",
		m.CPU, m.Cores, m.Go, m.OS, m.Kernel, m.LoadAvg)
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
	counted := 0
	for _, t := range r.Targets {
		mark := verdict(t)
		if t.Unresolved == "" {
			counted++
		}
		if t.Met && t.Unresolved == "" {
			met++
		}
		src := ""
		if t.Source == "§6" {
			src = " (§6)"
		}
		p("| %s | %s%s | %s | %s | %s |\n", t.Group, t.What, src, t.Goal, t.Measured, mark)
	}
	p("\n%d of %d met", met, counted)
	if n := len(r.Targets) - counted; n > 0 {
		p("; %d not judged, the bench cannot resolve them here", n)
	}
	p(". Why each miss happens and what is left: [Findings](#findings), below the generated part.\n\n")
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
	warnings(p, o)
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

// verdict is a target's last column.
func verdict(t Target) string {
	switch {
	case t.Unresolved != "":
		return "not judged: " + t.Unresolved
	case t.Met:
		return "met"
	}
	return "**missed**"
}

// missesSection lists this run's misses by id: docs/benchmarks.md's
// Findings, written by hand, explain them under the same ids.
func missesSection(p printer, r *Results) {
	var ids []string
	for _, t := range r.Targets {
		if !t.Met && t.Unresolved == "" {
			ids = append(ids, "`"+t.ID+"`")
		}
	}
	if len(ids) > 0 {
		p("Missed in this run: %s.\n\n", strings.Join(ids, ", "))
	}
}
