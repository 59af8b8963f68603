package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The history part (issue 16): what writing every finished request to
// SQLite costs the request path, and whether the writer keeps up.
//
//   - Overhead, same run: two `subpool serve` processes of one binary, one
//     with history on (the default) and one with [history] enabled = false,
//     against one upstream, in interleaved rounds with direct beside them:
//     JSON latency at concurrency 1 and 32, and CPU per request. The goal
//     is no difference within noise, where noise is how far the off arm's
//     own p50 moves from round to round.
//   - Sustained: the history-on server at 1,000 requests/s, open loop (each
//     request sent on its schedule, whatever the last one did), for a few
//     seconds; then every answered request must be a row, and no row
//     dropped.

// HistoryBench is the history part's outcome. Times in µs.
type HistoryBench struct {
	Rounds int `json:"rounds"`
	// JSON is by case ("c1", "c32") and arm ("direct", "on", "off"): the
	// median over rounds of each round's p50 and p99.
	JSON map[string]map[string]Pcts `json:"json_latency_us"`
	// Diff is on − off by case; Noise the spread (max − min over rounds)
	// of the off arm's p50 and p99 by case.
	Diff  map[string]Pcts `json:"on_minus_off_us"`
	Noise map[string]Pcts `json:"off_spread_us"`
	// CPU per request at concurrency 32 by arm ("on", "off").
	CPU       map[string]num `json:"cpu_per_request_us"`
	Sustained *Sustained     `json:"sustained,omitempty"`
	// SustainedOff is the same load on the history-off server, right
	// after, and SustainedDirect on the upstream alone: what the machine
	// and the proxy do at that rate without the history.
	SustainedOff    *Sustained `json:"sustained_off,omitempty"`
	SustainedDirect *Sustained `json:"sustained_direct,omitempty"`
}

// Sustained is the open-loop run against the history-on server.
type Sustained struct {
	Rate    int   `json:"target_rps"`
	Planned int   `json:"planned"`
	OK      int64 `json:"ok"`
	Errors  int64 `json:"errors"`
	// SendRPS is the rate the requests went out at; Late counts requests
	// sent more than 10 ms after their slot (the client fell behind).
	SendRPS num   `json:"send_rps"`
	Late    int64 `json:"late"`
	P50     num   `json:"p50_us"`
	P99     num   `json:"p99_us"`
	// Over1s counts answers that took over a second, and Max the longest.
	Over1s int64 `json:"over_1s"`
	Max    num   `json:"max_us"`
	// Rows are the history's rows for the run, read back through the admin
	// API; Dropped is the history's drop count after it.
	Rows     int64  `json:"rows"`
	Dropped  int64  `json:"dropped"`
	FirstErr string `json:"first_error,omitempty"`
}

type historyConfig struct {
	Rounds      int
	C1Requests  int
	C32Duration time.Duration
	Rate        int
	Sustain     time.Duration
}

func defaultHistory(quick bool) historyConfig {
	c := historyConfig{Rounds: 5, C1Requests: 300, C32Duration: 800 * time.Millisecond, Rate: 1000, Sustain: 10 * time.Second}
	if quick {
		c.Rounds, c.C1Requests, c.C32Duration, c.Sustain = 3, 150, 400*time.Millisecond, 4*time.Second
	}
	return c
}

// historyPart runs the part on res.Built's binary, building it when the
// overhead part did not.
func historyPart(ctx context.Context, ro runOpts, res *Results, logf func(string, ...any)) error {
	if err := ensureBuilt(ctx, "history", ro.bin, res, logf); err != nil {
		return err
	}
	logf("history: served overhead with history on vs off, interleaved; then %d requests/s sustained", defaultHistory(ro.quick).Rate)
	h, err := runHistory(ctx, res.Built.Path, defaultHistory(ro.quick), ro.pin, logf)
	if err != nil {
		return err
	}
	res.History = h
	return nil
}

func runHistory(ctx context.Context, bin string, cfg historyConfig, pin bool, logf func(string, ...any)) (*HistoryBench, error) {
	cpu := func(c string) string {
		if pin {
			return c
		}
		return ""
	}
	up, err := startChild("upstream", "", cpu("0"))
	if err != nil {
		return nil, err
	}
	defer up.stop()
	on, err := startServedConf(ctx, bin, up.url, cpu("1"), "")
	if err != nil {
		return nil, err
	}
	defer on.stop()
	off, err := startServedConf(ctx, bin, up.url, cpu("1"), "\n[history]\nenabled = false\n")
	if err != nil {
		return nil, err
	}
	defer off.stop()
	arms := []*arm{
		newArm("direct", up.url, "sk-bench-direct", nil),
		newArm("on", on.url, on.clientKey, on),
		newArm("off", off.url, off.clientKey, off),
	}
	for _, a := range arms {
		if r := a.closedLoop(8, 200, 0); r.errors > 0 {
			return nil, fmt.Errorf("history %s arm does not answer: %v", a.name, r.firstErr)
		}
	}
	// The off server must really keep nothing, or the comparison is moot.
	if _, err := usageSince(ctx, off, time.Now().Add(-time.Hour)); err == nil {
		return nil, fmt.Errorf("the history-off server answers usage queries: its history is on")
	}

	h := &HistoryBench{Rounds: cfg.Rounds, JSON: map[string]map[string]Pcts{}, Diff: map[string]Pcts{},
		Noise: map[string]Pcts{}, CPU: map[string]num{}}
	per, use, err := historyRounds(arms, cfg, logf)
	if err != nil {
		return nil, err
	}
	historyMedians(h, per, arms)
	for name, u := range use {
		h.CPU[name] = num(u.perRequest())
	}

	for _, run := range []struct {
		a   *arm
		s   *served
		dst **Sustained
	}{{arms[1], on, &h.Sustained}, {arms[2], off, &h.SustainedOff}, {arms[0], nil, &h.SustainedDirect}} {
		logf("  sustained: %d requests/s for %s, arm %s", cfg.Rate, cfg.Sustain, run.a.name)
		res, err := sustain(ctx, run.a, run.s, cfg.Rate, cfg.Sustain, run.a.name == "on")
		if err != nil {
			return nil, err
		}
		*run.dst = res
		logf("  sustained, arm %s: sent at %.0f/s, %d ok, %d errors, p99 %s, %d rows, %d dropped", run.a.name,
			float64(res.SendRPS), res.OK, res.Errors, us(res.P99), res.Rows, res.Dropped)
	}
	return h, nil
}

// historyRounds runs the JSON rounds, arms in random order each round:
// per case and arm each round's (p50, p99), and the servers' CPU.
func historyRounds(arms []*arm, cfg historyConfig, logf func(string, ...any)) (map[string]map[string][][2]float64, map[string]*cpuUse, error) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16))
	cases := []string{"c1", "c32"}
	per := map[string]map[string][][2]float64{} // case → arm → rounds of (p50, p99)
	for _, c := range cases {
		per[c] = map[string][][2]float64{}
	}
	use := map[string]*cpuUse{"on": {}, "off": {}}
	for r := range cfg.Rounds {
		for _, i := range rng.Perm(len(arms)) {
			a := arms[i]
			a.closedLoop(8, 40, 0) // warm connections
			c1 := a.closedLoop(1, cfg.C1Requests, 0)
			var t0 time.Duration
			if a.proc != nil {
				t0, _ = cpuTime(a.proc.pid())
			}
			c32 := a.closedLoop(32, 0, cfg.C32Duration)
			if a.proc != nil {
				t1, _ := cpuTime(a.proc.pid())
				use[a.name].add(t1-t0, len(c32.lat))
			}
			if n := c1.errors + c32.errors; n > 0 {
				return nil, nil, fmt.Errorf("history %s arm: %d errors (%v)", a.name, n, firstErr(c1, c32))
			}
			per["c1"][a.name] = append(per["c1"][a.name], [2]float64{pct(c1.lat, .5), pct(c1.lat, .99)})
			per["c32"][a.name] = append(per["c32"][a.name], [2]float64{pct(c32.lat, .5), pct(c32.lat, .99)})
		}
		logf("  history round %d: c1 p50 direct %.0f on %.0f off %.0f µs", r+1,
			per["c1"]["direct"][r][0], per["c1"]["on"][r][0], per["c1"]["off"][r][0])
	}
	return per, use, nil
}

// sustain sends rate requests a second for dur on a fixed schedule, then,
// with readBack, reads back how many rows the history holds for them.
func sustain(ctx context.Context, a *arm, s *served, rate int, dur time.Duration, readBack bool) (*Sustained, error) {
	n := int(float64(rate) * dur.Seconds())
	res := &Sustained{Rate: rate, Planned: n}
	interval := time.Second / time.Duration(rate)
	// Bounded: a server that stops answering ends the run instead of
	// piling up goroutines.
	rctx, cancel := context.WithTimeout(ctx, dur+time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		lat   = make([]time.Duration, 0, n)
		ok    atomic.Int64
		errs  atomic.Int64
		first string
		wg    sync.WaitGroup
	)
	time.Sleep(300 * time.Millisecond) // the last round's rows committed
	since := time.Now()
	start := time.Now()
	var last time.Time
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		last = time.Now()
		if last.Sub(due) > 10*time.Millisecond {
			res.Late++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := a.once(rctx)
			if err != nil {
				errs.Add(1)
				mu.Lock()
				if first == "" {
					first = err.Error()
				}
				mu.Unlock()
				return
			}
			ok.Add(1)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
		if rctx.Err() != nil {
			break
		}
	}
	wg.Wait()
	if sent := last.Sub(start); sent > 0 {
		res.SendRPS = num(float64(n-1) / sent.Seconds())
	}
	res.OK, res.Errors, res.FirstErr = ok.Load(), errs.Load(), first
	res.P50, res.P99, res.Max = num(pct(lat, .5)), num(pct(lat, .99)), num(pct(lat, 1))
	for _, d := range lat {
		if d > time.Second {
			res.Over1s++
		}
	}
	if !readBack {
		return res, nil
	}
	return res, readRows(ctx, s, since, res)
}

// readRows reads back how many rows the history holds for what sustain
// sent since since. The writer commits every 250 ms; a few seconds is
// plenty for the last batch, and a bounded wait either way.
func readRows(ctx context.Context, s *served, since time.Time, res *Sustained) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, err := usageSince(ctx, s, since)
		if err != nil {
			return fmt.Errorf("reading the history back: %v", err)
		}
		res.Rows, res.Dropped = rep.Total.Requests, rep.Dropped
		if res.Rows+res.Dropped >= res.OK+res.Errors || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// usageReport is the part of api.UsageReport the bench reads.
type usageReport struct {
	Total struct {
		Requests int64 `json:"requests"`
	} `json:"total"`
	Dropped int64 `json:"dropped"`
}

// usageSince asks the served binary's admin API for its totals since t.
func usageSince(ctx context.Context, s *served, t time.Time) (usageReport, error) {
	var rep usageReport
	tok, err := os.ReadFile(filepath.Join(s.home, "admin-token"))
	if err != nil {
		return rep, err
	}
	q := url.Values{"since": {t.Format(time.RFC3339Nano)}, "by": {"provider"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/subpool/v1/usage?"+q.Encode(), nil)
	if err != nil {
		return rep, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return rep, fmt.Errorf("usage: status %d", resp.StatusCode)
	}
	return rep, json.NewDecoder(resp.Body).Decode(&rep)
}

// judgeHistory: the two goals for the history.
func judgeHistory(h *HistoryBench) []Target {
	if h == nil {
		return nil
	}
	var ts []Target
	for _, c := range []string{"c1", "c32"} {
		d, noise := h.Diff[c], h.Noise[c].P50
		ts = append(ts, Target{ID: "history-overhead-" + c, Group: "history", Source: "brief",
			What:     "served latency p50, history on − off, same run, " + c,
			Goal:     "within noise (the off arm's own p50 spread over rounds)",
			Measured: fmt.Sprintf("%s (on %s, off %s; noise %s)", us(d.P50), us(h.JSON[c]["on"].P50), us(h.JSON[c]["off"].P50), us(noise)),
			Value:    d.P50, Limit: noise, Met: !math.IsNaN(float64(d.P50)) && float64(d.P50) <= float64(noise)})
	}
	if s := h.Sustained; s != nil {
		// Answers that pile up for seconds are not a rate sustained, rows
		// or no rows.
		met := s.Errors == 0 && s.Dropped == 0 && s.Rows == s.OK && s.Over1s == 0 && float64(s.SendRPS) >= 0.98*float64(s.Rate)
		ts = append(ts, Target{ID: "history-sustained", Group: "history", Source: "brief",
			What: fmt.Sprintf("%d requests/s sustained through subpool serve, every one a history row", s.Rate),
			Goal: "no drops, no errors, no answer over 1 s",
			Measured: fmt.Sprintf("sent %d at %.0f/s: %d ok, %d errors, %d rows, %d dropped; p99 %s, %d over 1 s", s.Planned, float64(s.SendRPS),
				s.OK, s.Errors, s.Rows, s.Dropped, us(s.P99), s.Over1s),
			Value: num(s.Dropped), Limit: 0, Met: met})
	}
	return ts
}

// historySection is the report's part for it.
func historySection(p func(string, ...any), h *HistoryBench) {
	if h == nil {
		return
	}
	p("## History on vs off\n\n")
	p("Two `subpool serve` of the same binary against one upstream, one with `[history] enabled = false`, in %d\n", h.Rounds)
	p("interleaved rounds with direct beside them (medians over rounds of each round's percentile, µs). Noise is how\n")
	p("far the off arm's own p50 moved between rounds.\n\n")
	p("| case | direct p50 | on p50 | off p50 | on − off p50 | noise p50 | on p99 | off p99 | on − off p99 | noise p99 |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range []string{"c1", "c32"} {
		j := h.JSON[c]
		p("| %s | %.0f | %.0f | %.0f | %+.0f | %.0f | %.0f | %.0f | %+.0f | %.0f |\n", c, float64(j["direct"].P50), float64(j["on"].P50),
			float64(j["off"].P50), float64(h.Diff[c].P50), float64(h.Noise[c].P50), float64(j["on"].P99), float64(j["off"].P99),
			float64(h.Diff[c].P99), float64(h.Noise[c].P99))
	}
	p("\nCPU per request at concurrency 32: on %.0f µs, off %.0f µs.\n\n", float64(h.CPU["on"]), float64(h.CPU["off"]))
	if s := h.Sustained; s != nil {
		p("Sustained, open loop (each request sent on its schedule whatever the others do), %d planned at %d/s:\n\n", s.Planned, s.Rate)
		p("| arm | sent at | late > 10 ms | answered | errors | p50 | p99 | over 1 s | max | rows | dropped |\n")
		p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range []struct {
			name string
			s    *Sustained
		}{{"history on", s}, {"history off", h.SustainedOff}, {"direct", h.SustainedDirect}} {
			if r.s == nil {
				continue
			}
			rows, dropped := fmt.Sprint(r.s.Rows), fmt.Sprint(r.s.Dropped)
			if r.s != s {
				rows, dropped = "–", "–"
			}
			p("| %s | %.0f/s | %d | %d | %d | %s | %s | %d | %s | %s | %s |\n", r.name, float64(r.s.SendRPS), r.s.Late, r.s.OK, r.s.Errors,
				us(r.s.P50), us(r.s.P99), r.s.Over1s, us(r.s.Max), rows, dropped)
		}
		p("\n")
	}
}

// historyMedians takes each arm's median over the rounds, the history's
// cost as on − off, and the off arm's own spread over the rounds, which is
// the noise that cost is read against.
func historyMedians(h *HistoryBench, per map[string]map[string][][2]float64, arms []*arm) {
	for _, c := range []string{"c1", "c32"} {
		h.JSON[c] = map[string]Pcts{}
		for _, a := range arms {
			var p50, p99 []float64
			for _, v := range per[c][a.name] {
				p50, p99 = append(p50, v[0]), append(p99, v[1])
			}
			h.JSON[c][a.name] = Pcts{num(median(p50)), num(median(p99))}
		}
		on, off := h.JSON[c]["on"], h.JSON[c]["off"]
		h.Diff[c] = Pcts{on.P50 - off.P50, on.P99 - off.P99}
		var spread [2]float64
		for k := range spread {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, v := range per[c]["off"] {
				lo, hi = min(lo, v[k]), max(hi, v[k])
			}
			spread[k] = hi - lo
		}
		h.Noise[c] = Pcts{num(spread[0]), num(spread[1])}
	}
}
