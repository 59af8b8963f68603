package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// The collector's settings for `subpool serve` are a trade of memory for
// CPU: a higher GOGC collects less often and keeps more garbage mapped.
// Issue 27 asks for the setting chosen on measurement, with the RSS after
// the concurrency-32 load at most 1.5× the bare proxy's. -gc runs that
// measurement: one served binary per setting (GOGC and GOMEMLIMIT in its
// environment, which tuneGC leaves alone) and the bare proxy, in
// interleaved rounds in a fresh random order, each round the JSON slice of
// the overhead phase (concurrency 1, 32, and the 256 KiB body), then each
// process's RSS.

// GCSetting is one collector setting tried; GOGC or MemLimit "" leaves
// that variable unset (tuneGC's choice), "off" turns it off.
type GCSetting struct {
	GOGC     string `json:"gogc"`
	MemLimit string `json:"gomemlimit"`
}

func (g GCSetting) String() string {
	if g.GOGC == "" && g.MemLimit == "" {
		return "serve's own (tuneGC)"
	}
	gc, ml := g.GOGC, g.MemLimit
	if gc == "" {
		gc = "tuneGC's"
	}
	if ml == "" {
		ml = "tuneGC's"
	}
	return "GOGC=" + gc + " GOMEMLIMIT=" + ml
}

func (g GCSetting) env() []string {
	var e []string
	if g.GOGC != "" {
		e = append(e, "GOGC="+g.GOGC)
	}
	if g.MemLimit != "" {
		e = append(e, "GOMEMLIMIT="+g.MemLimit)
	}
	return e
}

// parseGCSettings reads -gc's list: "default" (no variable set), or
// GOGC[/GOMEMLIMIT] with the limit "off" when left out:
// "default,100,400,400/64MiB".
func parseGCSettings(s string) ([]GCSetting, error) {
	var out []GCSetting
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case f == "default":
			out = append(out, GCSetting{})
			continue
		}
		gc, ml, ok := strings.Cut(f, "/")
		if !ok {
			ml = "off"
		}
		if gc == "" || ml == "" {
			return nil, fmt.Errorf("-gc: %q is not GOGC[/GOMEMLIMIT]", f)
		}
		out = append(out, GCSetting{GOGC: gc, MemLimit: ml})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-gc: no setting")
	}
	return out, nil
}

// GCRow is one setting's outcome: medians over rounds, with the lowest and
// highest round. The ratios are taken round by round against the bare
// proxy of the same round, then their median.
type GCRow struct {
	Setting  GCSetting `json:"setting"`
	CPU      num       `json:"cpu_per_request_us"`
	CPURatio num       `json:"cpu_vs_bare"`
	CPULo    num       `json:"cpu_vs_bare_lowest"`
	CPUHi    num       `json:"cpu_vs_bare_highest"`
	// GCCPU is the collector's own CPU per request at concurrency 32
	// (GODEBUG=gctrace=1): the part of the CPU the settings change, and
	// steadier than the whole on a shared machine.
	GCCPU    num   `json:"gc_cpu_per_request_us"`
	GCCPULo  num   `json:"gc_cpu_lowest"`
	GCCPUHi  num   `json:"gc_cpu_highest"`
	Cycles   int64 `json:"gc_cycles"` // over the whole sweep
	RSS      int64 `json:"rss_after_c32_bytes"`
	RSSRatio num   `json:"rss_vs_bare"`
	RSSLo    num   `json:"rss_vs_bare_lowest"`
	RSSHi    num   `json:"rss_vs_bare_highest"`
	RSSMax   int64 `json:"rss_after_c32_highest_bytes"`
	Chosen   bool  `json:"chosen,omitempty"`
}

// GCSweep is -gc's outcome, kept in results.json as gc_sweep.
type GCSweep struct {
	Date    string  `json:"date"`
	Rev     string  `json:"revision,omitempty"`
	Rounds  int     `json:"rounds"`
	Load    string  `json:"load"`
	Bare    GCRow   `json:"bare"`
	Rows    []GCRow `json:"settings"`
	RSSGoal num     `json:"rss_goal_vs_bare"`
}

// gcRSSGoal is issue 27's bound on the RSS after the concurrency-32 load.
const gcRSSGoal = 1.5

// chooseGC marks the setting that meets the RSS goal at the least CPU:
// the collector's own, which is what the settings change (the rest is the
// same code in every process, and the whole moves by a tenth from round
// to round here).
func (s *GCSweep) chooseGC() {
	best := -1
	for i, r := range s.Rows {
		s.Rows[i].Chosen = false
		if float64(r.RSSRatio) > gcRSSGoal || math.IsNaN(float64(r.RSSRatio)) {
			continue
		}
		if best < 0 || r.GCCPU < s.Rows[best].GCCPU {
			best = i
		}
	}
	if best >= 0 {
		s.Rows[best].Chosen = true
	}
}

func runGCSweep(bin string, settings []GCSetting, rounds int, logf func(string, ...any)) (*GCSweep, error) {
	up, err := startChild("upstream", "", "")
	if err != nil {
		return nil, err
	}
	defer up.stop()
	bare, err := startChild("bare", up.url, "")
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	arms := []*arm{newArm("bare", bare.url, "sk-bench-bare", bare)}
	var procs []*served
	for _, g := range settings {
		s, err := startServed(ctx, bin, up.url, "", append(g.env(), "GODEBUG=gctrace=1"))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", g, err)
		}
		defer s.stop()
		procs = append(procs, s)
		arms = append(arms, newArm(g.String(), s.url, s.clientKey, s))
	}
	for _, a := range arms {
		if r := a.closedLoop(8, 200, 0); r.errors > 0 {
			return nil, fmt.Errorf("%s does not answer: %v", a.name, r.firstErr)
		}
	}
	// Per round and arm: CPU and requests at concurrency 32, the
	// collector's CPU in them, and the RSS after the arm's last slice.
	type use struct {
		cpu, gc  time.Duration
		requests int
		rss      int64
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	perRound := make([]map[string]*use, rounds)
	const nSlices = 4
	for r := range rounds {
		u := map[string]*use{}
		for _, a := range arms {
			u[a.name] = &use{}
		}
		for range nSlices {
			for _, i := range rng.Perm(len(arms)) {
				a := arms[i]
				a.closedLoop(8, 40, 0)
				c1 := a.closedLoop(1, 100/nSlices, 0)
				var g0 int64
				if i > 0 {
					g0 = procs[i-1].gcCPU.Load()
				}
				t0, _ := cpuTime(a.proc.pid())
				c32 := a.closedLoop(32, 0, time.Second/nSlices)
				t1, _ := cpuTime(a.proc.pid())
				if i > 0 {
					u[a.name].gc += time.Duration(procs[i-1].gcCPU.Load()-g0) * time.Microsecond
				}
				big := a.withBody(bigBody).closedLoop(1, 24/nSlices, 0)
				if n := c1.errors + c32.errors + big.errors; n > 0 {
					return nil, fmt.Errorf("%s: %d errors (%v)", a.name, n, firstErr(c1, c32, big))
				}
				v, err := a.proc.rss()
				if err != nil {
					return nil, err
				}
				u[a.name].cpu += t1 - t0
				u[a.name].requests += len(c32.lat)
				u[a.name].rss = v
			}
		}
		perRound[r] = u
		b := u["bare"]
		logf("gc round %d of %d: bare CPU %.0f µs, RSS %s", r+1, rounds, float64(b.cpu)/float64(b.requests)/1e3, mib(b.rss))
	}
	sw := &GCSweep{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Rounds: rounds, RSSGoal: gcRSSGoal,
		Load: fmt.Sprintf("each round in %d slices, every process in a fresh random order in each: %d requests at concurrency 1, %s at concurrency 32 (CPU), %d requests with 256 KiB bodies; VmRSS after its last slice",
			nSlices, 100/nSlices, time.Second/nSlices, 24/nSlices)}
	row := func(name string) GCRow {
		var cpu, gc, cr, rr, rss []float64
		for _, u := range perRound {
			x, b := u[name], u["bare"]
			c := float64(x.cpu) / float64(x.requests) / 1e3
			cpu = append(cpu, c)
			gc = append(gc, float64(x.gc)/float64(x.requests)/1e3)
			cr = append(cr, ratio(c, float64(b.cpu)/float64(b.requests)/1e3))
			rr = append(rr, ratio(float64(x.rss), float64(b.rss)))
			rss = append(rss, float64(x.rss))
		}
		return GCRow{CPU: num(median(cpu)), CPURatio: num(median(cr)), CPULo: num(slices.Min(cr)), CPUHi: num(slices.Max(cr)),
			GCCPU: num(median(gc)), GCCPULo: num(slices.Min(gc)), GCCPUHi: num(slices.Max(gc)),
			RSS: int64(median(rss)), RSSRatio: num(median(rr)), RSSLo: num(slices.Min(rr)), RSSHi: num(slices.Max(rr)),
			RSSMax: int64(slices.Max(rss))}
	}
	sw.Bare = row("bare")
	sw.Bare.GCCPU, sw.Bare.GCCPULo, sw.Bare.GCCPUHi = num(math.NaN()), num(math.NaN()), num(math.NaN())
	for i, g := range settings {
		r := row(arms[i+1].name)
		r.Setting = g
		cycles := procs[i].gcCycles.Load()
		r.Cycles = cycles
		sw.Rows = append(sw.Rows, r)
	}
	sw.chooseGC()
	return sw, nil
}

// gcMain runs -gc and keeps its outcome in the results file (creating
// one if there is none), then rewrites the report from it.
func gcMain(list, bin, jsonPath, mdPath string, rounds int) error {
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	settings, err := parseGCSettings(list)
	if err != nil {
		return err
	}
	built, err := buildOutOfRun(bin, logf)
	if err != nil {
		return err
	}
	sw, err := runGCSweep(built.Path, settings, max(rounds, 5), logf)
	if err != nil {
		return err
	}
	sw.Rev = built.Rev
	for _, r := range sw.Rows {
		mark := ""
		if r.Chosen {
			mark = "  ← chosen"
		}
		logf("%-40s CPU %5.1f µs %.2f× bare (%.2f–%.2f), GC %4.1f µs (%.1f–%.1f)  RSS %s %.2f× bare (%.2f–%.2f)%s", r.Setting, float64(r.CPU),
			float64(r.CPURatio), float64(r.CPULo), float64(r.CPUHi), float64(r.GCCPU), float64(r.GCCPULo), float64(r.GCCPUHi),
			mib(r.RSS), float64(r.RSSRatio), float64(r.RSSLo), float64(r.RSSHi), mark)
	}
	logf("%-40s CPU %5.1f µs  RSS %s", "bare", float64(sw.Bare.CPU), mib(sw.Bare.RSS))
	return keepInResults(jsonPath, mdPath, func(res *Results) {
		if res.GCSweep != nil {
			res.Notes = dropCarried(res.Notes, sweepCarried(res.GCSweep))
		}
		res.GCSweep = sw
	})
}
