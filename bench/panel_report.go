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
