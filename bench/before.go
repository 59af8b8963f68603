package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// beforeFile keeps the served binary's profile from the run before a
// round of performance work, so the report can set the current profile
// beside it: what the work removed, function by function. Replace it (go
// run ./bench -save-before) before the next such round.
const beforeFile = "bench/profile_before.json"

// Before is that earlier run: which code it measured, its CPU per request
// at concurrency 32 (bare proxy and served binary, µs) and the served
// binary's profile.
type Before struct {
	What       string  `json:"what"`
	BareCPU    float64 `json:"bare_cpu_per_request_us"`
	SubpoolCPU float64 `json:"subpool_cpu_per_request_us"`
	Profile    Prof    `json:"profile"`
}

func loadBefore(path string) *Before {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var bf Before
	if json.Unmarshal(b, &bf) != nil || bf.Profile.Samples == 0 {
		return nil
	}
	return &bf
}

// saveBefore writes beforeFile from a results file with a profile.
func saveBefore(resultsPath, what string) error {
	r, err := readResults(resultsPath)
	if err != nil {
		return err
	}
	o := r.Overhead
	if o == nil || o.Profiles["subpool"].Samples == 0 {
		return fmt.Errorf("%s has no profile of the served binary (run with -profile)", resultsPath)
	}
	prof := o.Profiles["subpool"]
	if fileExists(prof.File) {
		// Summarised again, so the list of subpool's own functions is
		// there whichever version of the bench wrote the results.
		if q, err := readProf(prof.File); err == nil {
			prof = q
		}
	}
	if what == "" && r.Built != nil {
		what = r.Built.How + " at " + r.Built.Rev
	}
	bf := Before{What: what + ", " + r.Machine.Date, BareCPU: float64(o.CPU["bare"]), SubpoolCPU: float64(o.CPU["subpool"]),
		Profile: prof}
	out, _ := json.MarshalIndent(bf, "", "  ")
	return os.WriteFile(beforeFile, append(out, '\n'), 0o644)
}

// beforeAfter sets the served binary's own functions (Prof.Own) before and
// now side by side, as µs of CPU per request: a function's share of the
// samples times the run's CPU per request, so runs with different totals
// compare.
func beforeAfter(p printer, bf *Before, now Prof, nowCPU, nowBare float64) {
	if bf == nil || len(now.Own) == 0 {
		return
	}
	p("\n#### Before and after\n\nThe same profile of the served binary before the changes for issue 17 (%s; `%s`) and in this run.\n", bf.What, beforeFile)
	p("CPU per request at concurrency 32: before %s µs against a bare %s µs (%s×), now %s µs against %s µs (%s×).\n",
		f1(bf.SubpoolCPU), f1(bf.BareCPU), f2(bf.SubpoolCPU/bf.BareCPU), f1(nowCPU), f1(nowBare), f2(nowCPU/nowBare))
	p("Each row is a function of subpool, the websocket, JSON encoding or SQLite, cum, as µs of CPU per request\n")
	p("(share of samples × CPU per request; nested, so rows do not add up). Top 20 before, and any new one over 1 µs.\n\n")
	p("| function | before µs | now µs |\n|---|--:|--:|\n")
	type row struct {
		fn          string
		before, now float64
	}
	rows := map[string]*row{}
	get := func(fn string) *row {
		if rows[fn] == nil {
			rows[fn] = &row{fn: fn}
		}
		return rows[fn]
	}
	for _, r := range bf.Profile.Own {
		get(r.Func).before = r.Pct / 100 * bf.SubpoolCPU
	}
	for _, r := range now.Own {
		get(r.Func).now = r.Pct / 100 * nowCPU
	}
	var list []*row
	for _, r := range rows {
		list = append(list, r)
	}
	// The rows come from a map, so ties are broken by name for a report
	// that -from reproduces byte for byte.
	sort.Slice(list, func(i, j int) bool {
		if list[i].before != list[j].before {
			return list[i].before > list[j].before
		}
		if list[i].now != list[j].now {
			return list[i].now > list[j].now
		}
		return list[i].fn < list[j].fn
	})
	shown := 0
	for _, r := range list {
		top := shown < 20 && r.before > 0
		if !top && !(r.before == 0 && r.now >= 1) {
			continue
		}
		if top {
			shown++
		}
		p("| `%s` | %s | %s |\n", strings.TrimPrefix(r.fn, "github.com/subpool/subpool/"), f1(r.before), f1(r.now))
	}
}
