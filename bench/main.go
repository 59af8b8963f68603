// Command bench measures subpool and writes docs/benchmarks.md and
// bench/results.json: `make bench` (= go run ./bench).
//
// Four parts, in this order:
//
//   - micro: the BenchmarkMicro* functions of proxy/ and proxy/classify/
//     (go test -bench, parsed): one verdict, one pick among 8 keys, one
//     outbound header build, one in-memory round trip;
//   - overhead: three arms in interleaved rounds (direct to internal/sim, a
//     bare httputil.ReverseProxy, and the built `subpool serve` on a home
//     set up through its CLI, with an events subscriber attached): JSON
//     latency at concurrency 1 and 32, throughput at p99 ≤ 10 ms, SSE
//     timing at 1, 64 and 256 streams (with a second bare proxy, the
//     noise floor), CPU and RSS. The in-process handler
//     (proxy.New in a bench child) joins the JSON rounds as a micro arm,
//     to show what the binary adds around the engine. -repeat N runs the
//     phase N times and judges the median;
//   - history: the served overhead with the request history on vs off in
//     one run, and 1,000 requests/s sustained with every one a row
//     (history.go);
//   - goodput: bench/goodput's simulator on a virtual clock, subpool's real
//     pool and classifier against four other policies.
//
// Each target of docs/benchmarks.md is judged on ratios within one run, so
// a busy machine slows every arm alike. The report is written between the
// markers of docs/benchmarks.md (mdfile.go); the prose around them, the
// findings, is written by hand. -quick runs a smaller set for
// development. Nothing listens beyond 127.0.0.1 and every load loop ends
// by itself.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subpool/subpool/bench/goodput"
)

// Results is bench/results.json.
type Results struct {
	Machine  Machine          `json:"machine"`
	Duration string           `json:"duration"`
	Micro    []Micro          `json:"micro"`
	Built    *Built           `json:"built,omitempty"`
	Overhead *Overhead        `json:"overhead,omitempty"`
	Repeats  []*Overhead      `json:"repeats,omitempty"` // runs 2..N of -repeat
	ServeRSS *RSS             `json:"serve_idle_rss,omitempty"`
	History  *HistoryBench    `json:"history,omitempty"`
	Goodput  []goodput.Result `json:"goodput"`
	Panel    *PanelBench      `json:"panel,omitempty"` // panel.go; go run ./bench -panel 10m alone
	Targets  []Target         `json:"targets"`
	Notes    []string         `json:"notes,omitempty"`
}

func main() {
	role := flag.String("child", "", "internal: run as a child server (upstream, bare, subpool)")
	upstream := flag.String("upstream", "", "internal: the upstream a child proxy forwards to")
	quick := flag.Bool("quick", false, "a small, fast run for development")
	skip := flag.String("skip", "", "comma-separated parts to skip: micro, overhead, history, goodput, panel")
	pin := flag.Bool("pin", false, "pin the upstream to CPU 0 and the proxies to CPU 1 (taskset)")
	repeat := flag.Int("repeat", 1, "run the overhead phase this many times; targets are judged on the median")
	bin := flag.String("bin", "", "measure this subpool binary instead of building one")
	md := flag.String("md", "docs/benchmarks.md", "the report to write")
	out := flag.String("json", "bench/results.json", "the results to write")
	from := flag.String("from", "", "measure nothing: rewrite the report from this results file")
	keep := flag.String("keep", "", "carry the parts this run skips over from this results file (micro, history, goodput, panel)")
	panel := flag.Duration("panel", 0, "measure the tray's memory alone for this long (panel.go), kept in -json as panel")
	flag.Parse()
	if *panel > 0 {
		if err := panelMain(*out, *md, *panel); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *from != "" {
		// With -json given, the results are written again too (judged
		// anew): how results spliced from two runs are put in the form a
		// run writes.
		jsonOut := ""
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "json" {
				jsonOut = *out
			}
		})
		if err := rewrite(*from, *md, jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *role != "" {
		if err := runChild(*role, *upstream); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	o := runOpts{quick: *quick, skip: *skip, pin: *pin, repeat: max(*repeat, 1), bin: *bin, keep: *keep}
	if err := run(o, *md, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// rewrite renders the report again from saved results, judging the
// targets anew (after a change to the targets or to the report).
func rewrite(from, mdPath, jsonPath string) error {
	res, err := readResults(from)
	if err != nil {
		return err
	}
	res.Targets = judge(&res)
	if jsonPath != "" {
		if err := writeResults(jsonPath, &res); err != nil {
			return err
		}
	}
	return writeReport(mdPath, &res)
}

type runOpts struct {
	quick, pin      bool
	skip, bin, keep string
	repeat          int
}

func run(ro runOpts, mdPath, jsonPath string) error {
	quick := ro.quick
	if _, err := os.Stat("go.mod"); err != nil {
		return fmt.Errorf("run from the repository root (make bench)")
	}
	skipped := map[string]bool{}
	for _, s := range strings.Split(ro.skip, ",") {
		skipped[strings.TrimSpace(s)] = true
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	start := time.Now()
	// -repeat 3 with -profile and the history phase runs past 20 minutes on two cores.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	res := Results{Machine: machine()}
	logf("bench: %s, %d cores, %s, load %s", res.Machine.CPU, res.Machine.Cores, res.Machine.Go, res.Machine.LoadAvg)

	if !skipped["micro"] {
		microPart(ctx, quick, &res, logf)
	}
	if !skipped["overhead"] {
		if err := overheadPart(ctx, ro, &res, logf); err != nil {
			return err
		}
	}
	if !skipped["history"] {
		if err := historyPart(ctx, ro, &res, logf); err != nil {
			return err
		}
	}
	if !skipped["goodput"] {
		logf("goodput: %d scenarios × %d strategies on a virtual clock", len(goodput.Scenarios(1)), len(goodput.Strategies()))
		scale := 1.0
		if quick {
			scale = 0.5
		}
		res.Goodput = goodput.RunAll(goodput.Scenarios(scale))
	}
	if !skipped["panel"] {
		res.Panel = panelPart(ctx, "", panelDuration(quick), logf)
	}
	res.Duration = time.Since(start).Round(time.Second).String()
	if ro.keep != "" {
		if err := carryOver(&res, ro.keep, skipped); err != nil {
			return err
		}
	}
	res.Targets = judge(&res)
	if err := writeResults(jsonPath, &res); err != nil {
		return err
	}
	if err := writeReport(mdPath, &res); err != nil {
		return err
	}
	met := 0
	for _, t := range res.Targets {
		if t.Met {
			met++
		}
	}
	logf("bench: %d of %d targets met; wrote %s and %s in %s", met, len(res.Targets), mdPath, jsonPath, res.Duration)
	return nil
}

// microPart runs the engine's micro benchmarks. A failure is kept as a
// note, not returned: the engine may be mid-change, and the served
// binary's numbers are still worth having.
func microPart(ctx context.Context, quick bool, res *Results, logf func(string, ...any)) {
	logf("micro: go test -bench '^BenchmarkMicro' %s", strings.Join(microPackages, " "))
	count, bt := 5, "300ms"
	if quick {
		count, bt = 2, "100ms"
	}
	ms, raw, err := runMicro(ctx, count, bt)
	if err != nil {
		note := "micro benchmarks did not run: " + firstLine(raw, err)
		logf("  %s", note)
		res.Notes = append(res.Notes, note)
	}
	res.Micro = ms
	os.MkdirAll("bench/out", 0o755)
	os.WriteFile("bench/out/micro.txt", []byte(raw), 0o644)
}

// overheadPart builds (or takes) the binary and runs the overhead phase
// ro.repeat times; the first run is the report's, the later ones its spread.
func overheadPart(ctx context.Context, ro runOpts, res *Results, logf func(string, ...any)) error {
	if err := ensureBuilt(ctx, "overhead", ro.bin, res, logf); err != nil {
		return err
	}
	cfg := defaultOverhead(ro.quick)
	cfg.Pin, cfg.Bin = ro.pin, res.Built.Path
	for i := range ro.repeat {
		logf("overhead run %d of %d: direct, bare ReverseProxy and the served binary, interleaved", i+1, ro.repeat)
		o, err := runOverhead(cfg, logf)
		if err != nil {
			return err
		}
		if i == 0 {
			res.Overhead = o
			res.ServeRSS = o.ServedIdle
		} else {
			res.Repeats = append(res.Repeats, o)
		}
		// Later runs show the spread of the judged numbers only: the
		// throughput steps and the handler arm are in the first.
		// Fewer rounds too, to keep -repeat 3 to a few minutes on two cores.
		cfg.Throughput, cfg.Handler = false, false
		cfg.Rounds = min(cfg.Rounds, 3)
	}
	return nil
}

// ensureBuilt builds the subpool binary into bench/out (or takes the one
// given) unless an earlier part of the run has, so that every part
// measures the same binary.
func ensureBuilt(ctx context.Context, part, given string, res *Results, logf func(string, ...any)) error {
	if res.Built != nil {
		return nil
	}
	dir, _ := filepath.Abs("bench/out")
	os.MkdirAll(dir, 0o755)
	logf("%s: building subpool", part)
	built, err := buildSubpool(ctx, dir, given, logf)
	if err != nil {
		return err
	}
	res.Built = &built
	return nil
}

// writeResults writes results.json.
func writeResults(path string, res *Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// carryOver takes the parts this run skipped from an earlier results
// file, so that a run of one part leaves the others' numbers in the
// report, each said to come from that run.
func carryOver(res *Results, from string, skipped map[string]bool) error {
	old, err := readResults(from)
	if err != nil {
		return fmt.Errorf("-keep: %v", err)
	}
	var kept []string
	if skipped["micro"] && len(old.Micro) > 0 {
		res.Micro, kept = old.Micro, append(kept, "micro")
	}
	if skipped["panel"] && old.Panel != nil {
		res.Panel, kept = old.Panel, append(kept, "panel")
	}
	if skipped["history"] && old.History != nil {
		res.History, kept = old.History, append(kept, "history")
	}
	if skipped["goodput"] && len(old.Goodput) > 0 {
		res.Goodput, kept = old.Goodput, append(kept, "goodput")
	}
	if len(kept) > 0 {
		res.Notes = append(res.Notes, carriedPrefix+from+carriedMid+strings.Join(kept, ", ")+".")
	}
	return nil
}

const (
	carriedPrefix = "Not measured in this run, carried over from "
	carriedMid    = " as earlier runs left it: "
)

// readResults reads a results file that an earlier run wrote.
func readResults(path string) (Results, error) {
	var res Results
	b, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("%s: %v", path, err)
	}
	return res, nil
}
