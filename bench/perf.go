package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The served binary has no profiling endpoint, so its CPU is sampled from
// outside with perf (Go binaries keep their symbols and frame pointers, so
// perf names Go functions and walks their stacks). The bare proxy is
// sampled the same way, so the two profiles compare like with like.

// Prof is one proxy's CPU profile under the concurrency-32 loop: the top
// functions by own (flat) and by inclusive (cum) share of samples.
type Prof struct {
	File    string    `json:"file"`
	Samples int       `json:"samples"`
	Flat    []ProfRow `json:"flat"`
	Cum     []ProfRow `json:"cum"`
	// Own is every function over 0.3 % cum that a bare proxy has no
	// counterpart for (isSubpoolOnly): where the served binary's extra
	// CPU goes.
	Own []ProfRow `json:"own"`
}

// ProfRow is one function's share of the samples, in percent.
type ProfRow struct {
	Pct  float64 `json:"pct"`
	Func string  `json:"func"`
}

const profTop = 15

// perfProfile samples a's process while a closed loop at 32 runs for dur.
func perfProfile(a *arm, dir string, dur time.Duration) (Prof, error) {
	load := func() { a.closedLoop(32, 0, dur) }
	return perfProfileOf(a, dir, a.name, func() { a.closedLoop(32, 0, time.Second) }, load)
}

// perfProfileOf samples a's process while load runs, into dir/name.perf.data.
// perf -p follows the threads that exist when it attaches: warm runs
// first, so the runtime has started the threads it serves the load with.
func perfProfileOf(a *arm, dir, name string, warm, load func()) (Prof, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return Prof{}, errors.New("perf is not installed (apt-get install linux-perf)")
	}
	warm()
	file := filepath.Join(dir, name+".perf.data")
	cmd := exec.Command("perf", "record", "-e", "cpu-clock", "-F", "997", "-g", "-o", file,
		"-p", strconv.Itoa(a.proc.pid()))
	out := &tailBuffer{max: 10}
	cmd.Stdout, cmd.Stderr = lineWriter{out}, lineWriter{out}
	if err := cmd.Start(); err != nil {
		return Prof{}, err
	}
	time.Sleep(300 * time.Millisecond) // perf attaches
	load()
	cmd.Process.Signal(syscall.SIGINT)
	// perf exits by the signal it was asked to stop with: not a failure
	// when it wrote its data.
	if err := waitOrKill(cmd, 30*time.Second); err != nil && !(isSignalExit(err) && fileExists(file)) {
		return Prof{}, fmt.Errorf("perf record: %v: %s", err, out)
	}
	return readProf(file)
}

// readProf summarises a perf.data file.
func readProf(file string) (Prof, error) {
	p := Prof{File: file}
	var err error
	if p.Flat, p.Samples, err = perfTop(file, false); err != nil {
		return p, err
	}
	cum, _, err := perfTop(file, true)
	for _, r := range cum {
		if isSubpoolOnly(r.Func) {
			p.Own = append(p.Own, r)
		}
	}
	p.Flat, p.Cum = p.Flat[:min(len(p.Flat), profTop)], cum[:min(len(cum), profTop)]
	return p, err
}

// isSubpoolOnly reports whether a profiled function is work the bare proxy
// has no counterpart for: subpool's packages, the event websocket, JSON
// encoding, the history database.
func isSubpoolOnly(fn string) bool {
	for _, p := range []string{"subpool/subpool/", "gorilla/websocket", "encoding/json", "modernc.org/sqlite"} {
		if strings.Contains(fn, p) {
			return true
		}
	}
	return false
}

// perfTop reads the profile's top functions: flat (self) or cumulative
// (children included).
func perfTop(file string, cum bool) ([]ProfRow, int, error) {
	mode := "--no-children"
	if cum {
		mode = "--children"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "perf", "report", "-i", file, "--stdio", mode, "-g", "none",
		"--sort", "symbol", "--percent-limit", "0.3").Output()
	if err != nil {
		return nil, 0, fmt.Errorf("perf report: %v", err)
	}
	rows, samples := parsePerfReport(string(out), cum)
	return rows, samples, nil
}

// parsePerfReport reads `perf report --stdio --sort symbol` lines:
//
//	# Samples: 2K of event 'cpu-clock'
//	    12.50%     3.10%  subpool  [.] runtime.futex          (--children)
//	     3.10%  [k] _raw_spin_unlock_irqrestore               (--no-children)
//
// With --children the first column is the inclusive share.
func parsePerfReport(out string, cum bool) ([]ProfRow, int) {
	var rows []ProfRow
	samples := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "# Samples: "); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				samples = parseCount(f[0])
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[0], "%") {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		i := 1
		for i < len(f) && strings.HasSuffix(f[i], "%") {
			i++
		}
		for i < len(f) && f[i] != "[.]" && f[i] != "[k]" {
			i++
		}
		if i+1 >= len(f) {
			continue
		}
		rest := f[i+1:]
		// perf may add IPC columns, "-" where the CPU gives none.
		for len(rest) > 1 && rest[len(rest)-1] == "-" {
			rest = rest[:len(rest)-1]
		}
		name := strings.Join(rest, " ")
		if f[i] == "[k]" {
			name = "[kernel] " + name
		}
		rows = append(rows, ProfRow{Pct: pct, Func: name})
	}
	return rows, samples
}

// parseCount reads perf's sample counts: "2K", "1M", "873".
func parseCount(s string) int {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1000, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1000000, strings.TrimSuffix(s, "M")
	}
	v, _ := strconv.ParseFloat(s, 64)
	return int(v * float64(mul))
}

// waitOrKill waits for a process the bench started, killing it after d.
func waitOrKill(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return errors.New("did not stop; killed")
	}
}

// lineWriter feeds a tailBuffer from an exec.Cmd's output.
type lineWriter struct{ t *tailBuffer }

func (w lineWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			w.t.add(l)
		}
	}
	return len(b), nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
