package main

import (
	"fmt"
	"strings"
	"time"
)

// panelSection is the panel's memory: both arms side by side, judged on
// the growth after the first minute and the highest RSS, with the served
// proxy's idle RSS beside them.
func panelSection(p printer, r *Results) {
	pb := r.Panel
	if pb == nil {
		return
	}
	p("## The panel's memory\n\n")
	if pb.Skipped != "" {
		p("Not measured in this run: %s.\n\n", pb.Skipped)
		return
	}
	dur, _ := time.ParseDuration(pb.Duration)
	p("The tray binary (cgo, Fyne) for %s, its RSS read every %s; %s. The first minute is start-up;\n", pb.Duration, pb.Every, pb.Display)
	p("the targets are a growth under %s after it and an RSS under %s throughout.\n\n", mib(panelGrowthMax), mib(panelRSSMax))
	p("| |")
	for _, a := range pb.Arms {
		p(" %s (`%s`) |", a.Name, a.Command)
	}
	p("\n|---|%s\n", strings.Repeat("--:|", len(pb.Arms)))
	row := func(name string, f func(PanelArm) string) {
		p("| %s |", name)
		for _, a := range pb.Arms {
			p(" %s |", f(a))
		}
		p("\n")
	}
	row("RSS after the first minute", func(a PanelArm) string { return mib(a.AtWarmup()) })
	row("growth after it (highest minus that)", func(a PanelArm) string { return mib(a.Growth()) })
	row("highest RSS", func(a PanelArm) string { return mib(a.Max()) })
	row("RSS at the end, of it anonymous", func(a PanelArm) string {
		if len(a.Samples) == 0 {
			return a.Err
		}
		s := a.Samples[len(a.Samples)-1]
		return mib(s.RSS) + ", " + mib(s.Anon)
	})
	row("RSS each minute", func(a PanelArm) string { return perMinute(a) })
	row("target", func(a PanelArm) string {
		if a.Name == "no panel" {
			return "(for comparison)"
		}
		if a.Met(dur) {
			return "met"
		}
		return "**missed**" + errSuffix(a.Err)
	})
	panelCauses(p)
	if s := r.ServeRSS; s != nil {
		p("\nBeside them, `subpool serve` (headless, no UI) idles at %s (%s anonymous): see Memory above.\n", mib(s.Total), mib(s.Anon))
	}
	p("\n")
}

func perMinute(a PanelArm) string {
	var out []string
	next := 0.0
	for _, s := range a.Samples {
		if s.At >= next {
			out = append(out, fmt.Sprintf("%.0f", float64(s.RSS)/(1<<20)))
			next += 60
		}
	}
	return strings.Join(out, " · ") + " MiB"
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// panelCauses says what made the open panel grow and what was done, read
// from a log of the textures Fyne made, heap profiles (-tags pprof) and
// pmap -x of the running tray (issue 42).
func panelCauses(p printer) {
	p("\nWhat grew while the panel was open, and what was done: Fyne's GL painter keeps a texture of every\n")
	p("distinct text it draws for a minute after it was last drawn, the pixels in the C heap (Mesa), and the\n")
	p("lines that count every second (countdowns, a hold's note, counters, recent events) made a new line-wide\n")
	p("texture a second each; they are drawn in runs now (`ui/runs.go`), a number its own small texture. The\n")
	p("window's menu bar (no tray host) was built anew every second, its credentials' lines counting down, and\n")
	p("Fyne's caches held each for a minute; the window's menu leaves those lines to the panel now. The demo's\n")
	p("simulated upstreams kept every request's headers and body; they keep none now (`sim.Options.NoRecords`).\n")
	p("Of what is left, about 57 MiB is Mesa's llvmpipe (libLLVM, file-backed, loaded only under a software GL)\n")
	p("and the Go heap, which holds about twice its live size (the fonts, most of that) under GOGC=100.\n")
}
