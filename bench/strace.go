package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Calls is a proxy's system calls per request at concurrency 1, counted by
// strace -c -f over a fixed number of requests. Goroutine hand-offs show
// as futex (a parked thread woken) and nanosleep (the runtime's usleep
// while spinning for work); the rest of the I/O is the same in any proxy.
type Calls struct {
	Requests  int                `json:"requests"`
	Futex     float64            `json:"futex"`
	Nanosleep float64            `json:"nanosleep"`
	Total     float64            `json:"total"`
	Top       map[string]float64 `json:"top"` // the ten most frequent, per request
}

// straceCount attaches strace to a's process (every thread) while n
// sequential requests run. strace slows every call alike, so only the
// counts are read, never the times.
func straceCount(a *arm, n int) (Calls, error) {
	if _, err := exec.LookPath("strace"); err != nil {
		return Calls{}, errors.New("strace is not installed (apt-get install strace)")
	}
	dir, err := os.MkdirTemp("", "subpool-bench-strace-")
	if err != nil {
		return Calls{}, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "summary")
	cmd := exec.Command("strace", "-c", "-f", "-o", file, "-p", strconv.Itoa(a.proc.pid()))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Calls{}, err
	}
	if err := cmd.Start(); err != nil {
		return Calls{}, err
	}
	attached := make(chan struct{})
	log := &tailBuffer{max: 10}
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.add(sc.Text())
			if !once && strings.Contains(sc.Text(), "attached") {
				once = true
				close(attached)
			}
		}
	}()
	select {
	case <-attached:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return Calls{}, fmt.Errorf("strace did not attach: %s", log)
	}
	time.Sleep(200 * time.Millisecond) // every thread attached
	a.closedLoop(1, 20, 0)             // connections open before the count
	res := a.closedLoop(1, n, 0)
	cmd.Process.Signal(syscall.SIGINT)
	if err := waitOrKill(cmd, 30*time.Second); err != nil && !isSignalExit(err) {
		return Calls{}, fmt.Errorf("strace: %v: %s", err, log)
	}
	if res.errors > 0 {
		return Calls{}, fmt.Errorf("%d errors under strace: %v", res.errors, res.firstErr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return Calls{}, err
	}
	// The 20 warm-up requests ran under strace too.
	return parseStrace(string(b), len(res.lat)+20), nil
}

func isSignalExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// parseStrace reads strace -c's table:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 45.00    0.001234          12       100        10 futex
//	100.00    0.002000                   300        15 total
//
// Total is summed from the rows: the total line's columns vary by version.
func parseStrace(out string, requests int) Calls {
	c := Calls{Requests: requests, Top: map[string]float64{}}
	if requests <= 0 {
		return c
	}
	type row struct {
		name  string
		calls int
	}
	var rows []row
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		name := f[len(f)-1]
		if name == "total" {
			continue // its columns differ between strace versions; summed below
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		per := float64(n) / float64(requests)
		c.Total += per
		switch name {
		case "futex":
			c.Futex = per
		case "nanosleep", "clock_nanosleep":
			c.Nanosleep += per
		}
		rows = append(rows, row{name, n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].calls > rows[j].calls })
	for i, r := range rows {
		if i == 10 {
			break
		}
		c.Top[r.name] = float64(r.calls) / float64(requests)
	}
	return c
}
