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
//     timing at 1, 64 and 256 streams, CPU, RSS, system calls per request
//     (strace) and, with -profile, perf profiles. The in-process handler
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
// a busy machine slows every arm alike. -quick runs a smaller set for
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
	GCSweep  *GCSweep         `json:"gc_sweep,omitempty"`      // go run ./bench -gc
	Panel    *PanelBench      `json:"panel,omitempty"`         // panel.go; go run ./bench -panel 10m alone
	Streams  *StreamSeries    `json:"stream_series,omitempty"` // go run ./bench -streams
	// StreamsEarlier are the series before Streams, newest first: those of
	// its code are judged with it (pooledSeries).
	StreamsEarlier []*StreamSeries `json:"stream_series_earlier,omitempty"`
	Targets        []Target        `json:"targets"`
	Notes          []string        `json:"notes,omitempty"`
}

func main() {
	role := flag.String("child", "", "internal: run as a child server (upstream, bare, subpool)")
	upstream := flag.String("upstream", "", "internal: the upstream a child proxy forwards to")
	quick := flag.Bool("quick", false, "a small, fast run for development")
	skip := flag.String("skip", "", "comma-separated parts to skip: micro, overhead, history, goodput, strace")
	pin := flag.Bool("pin", false, "pin the upstream to CPU 0 and the proxies to CPU 1 (taskset)")
	profile := flag.Bool("profile", false, "also profile both proxies under load with perf (bench/out/*.perf.data)")
	repeat := flag.Int("repeat", 1, "run the overhead phase this many times; targets are judged on the median")
	bin := flag.String("bin", "", "measure this subpool binary instead of building one")
	md := flag.String("md", "docs/benchmarks.md", "the report to write")
	out := flag.String("json", "bench/results.json", "the results to write")
	from := flag.String("from", "", "measure nothing: rewrite the report from this results file")
	saveBeforeFrom := flag.String("save-before", "", "measure nothing: keep this results file's profile as "+beforeFile)
	ab := flag.String("ab", "", "compare this subpool binary with -bin (or the working tree's) on CPU per request; no report")
	gc := flag.String("gc", "", "measure RSS after concurrency 32 and CPU per request for these collector settings (default,GOGC[/GOMEMLIMIT],…), kept in -json as gc_sweep; -repeat rounds (at least 5)")
	streams := flag.Int("streams", 0, "measure the 256-stream wave alone in this many runs on fresh processes, kept in -json as stream_series")
	keep := flag.String("keep", "", "carry the parts this run skips over from this results file (micro, history, goodput, the collector sweep)")
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
	if *saveBeforeFrom != "" {
		if err := saveBefore(*saveBeforeFrom, ""); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *gc != "" {
		if err := gcMain(*gc, *bin, *out, *md, *repeat); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *streams > 0 {
		if err := streamsMain(*bin, *out, *md, *streams, streamRounds); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *ab != "" {
		if err := abMain(*ab, *bin, *repeat); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o := runOpts{quick: *quick, skip: *skip, pin: *pin, profile: *profile, repeat: max(*repeat, 1), bin: *bin, keep: *keep}
	if err := run(o, *md, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// rewrite renders the report again from saved results, judging the
// targets anew (after a change to the targets or the findings' text).
func rewrite(from, mdPath, jsonPath string) error {
	res, err := readResults(from)
	if err != nil {
		return err
	}
	// perf's files are re-read when still there, so a change to the
	// summary applies without measuring again.
	for _, o := range append([]*Overhead{res.Overhead}, res.Repeats...) {
		if o == nil {
			continue
		}
		for name, p := range o.Profiles {
			if fileExists(p.File) {
				if q, err := readProf(p.File); err == nil {
					o.Profiles[name] = q
				}
			}
		}
	}
	res.Targets = judge(&res)
	if jsonPath != "" {
		if err := writeResults(jsonPath, &res); err != nil {
			return err
		}
	}
	return os.WriteFile(mdPath, []byte(report(&res)), 0o644)
}

type runOpts struct {
	quick, pin, profile bool
	skip, bin, keep     string
	repeat              int
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
		if err := overheadPart(ctx, ro, skipped["strace"], &res, logf); err != nil {
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
	if err := os.WriteFile(mdPath, []byte(report(&res)), 0o644); err != nil {
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
func overheadPart(ctx context.Context, ro runOpts, noStrace bool, res *Results, logf func(string, ...any)) error {
	if err := ensureBuilt(ctx, "overhead", ro.bin, res, logf); err != nil {
		return err
	}
	cfg := defaultOverhead(ro.quick)
	cfg.Pin, cfg.Bin, cfg.Strace = ro.pin, res.Built.Path, !noStrace
	if ro.profile {
		cfg.Profile, _ = filepath.Abs("bench/out")
	}
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
		// throughput steps, the handler arm, the profile and strace
		// are in the first.
		// Fewer rounds too, to keep -repeat 3 to a few minutes on two cores.
		cfg.Throughput, cfg.Handler, cfg.Profile, cfg.Strace = false, false, "", false
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

// keepInResults puts what a mode beside a full run measured (-gc,
// -streams) into the results file, leaving the rest as it was, judges
// anew and writes the report. set takes the part's carried-over note off.
func keepInResults(jsonPath, mdPath string, set func(*Results)) error {
	res, err := readResults(jsonPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err != nil {
		res = Results{Machine: machine()}
	}
	set(&res)
	res.Targets = judge(&res)
	if err := writeResults(jsonPath, &res); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(report(&res)), 0o644)
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
// report, each said to come from that run. The collector sweep (-gc) is
// always carried: no full run measures it.
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
	if res.GCSweep == nil && old.GCSweep != nil {
		res.GCSweep, kept = old.GCSweep, append(kept, sweepCarried(old.GCSweep))
	}
	if res.Streams == nil && old.Streams != nil {
		res.Streams, kept = old.Streams, append(kept, streamsCarried(old.Streams))
		res.StreamsEarlier = old.StreamsEarlier
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

func streamsCarried(s *StreamSeries) string {
	return "the 256-stream series (-streams, " + s.Date + ")"
}

func sweepCarried(sw *GCSweep) string { return "the collector sweep (-gc, " + sw.Date + ")" }

// dropCarried takes part off the carried-over note once it has been
// measured again (a -gc run into results that carried the last sweep),
// and the note with it when nothing is left.
func dropCarried(notes []string, part string) []string {
	var out []string
	for _, n := range notes {
		head, list, ok := strings.Cut(n, carriedMid)
		if !ok || !strings.HasPrefix(head, carriedPrefix) {
			out = append(out, n)
			continue
		}
		// A part may hold ", " itself (the sweep's "(-gc, "): it goes whole.
		list = strings.TrimSuffix(list, ".")
		switch {
		case list == part:
			continue
		case strings.HasSuffix(list, ", "+part):
			list = strings.TrimSuffix(list, ", "+part)
		default:
			list = strings.Replace(list, part+", ", "", 1)
		}
		out = append(out, head+carriedMid+list+".")
	}
	return out
}

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
