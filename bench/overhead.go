package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/subpool/subpool/proxy/policy"
)

// overheadConfig sizes the black-box phase.
type overheadConfig struct {
	Rounds      int           // interleaved rounds (≥ 5)
	C1Requests  int           // sequential requests per arm per round
	C32Duration time.Duration // closed loop at 32 per arm per round
	TputRounds  int
	TputSteps   []int
	TputStep    time.Duration
	SSEStreams  []int
	MemStreams  int
	MemRounds   int
	Pin         bool
	// Bin is the subpool binary measured as the "subpool" arm.
	Bin string
	// Handler adds the in-process handler (proxy.New in a bench child,
	// no admin, no state file) to the JSON rounds: a micro comparison that
	// shows what the served binary adds around the engine.
	Handler bool
	// Throughput steps the concurrency; off in repeated runs.
	Throughput bool
}

func defaultOverhead(quick bool) overheadConfig {
	c := overheadConfig{Rounds: 5, C1Requests: 400, C32Duration: time.Second, TputRounds: 3,
		TputSteps: []int{1, 4, 8, 12, 16, 24, 32, 48, 64}, TputStep: 400 * time.Millisecond,
		SSEStreams: []int{1, 64, 256}, MemStreams: 500, MemRounds: 2, Handler: true, Throughput: true}
	if quick {
		c.Rounds, c.C1Requests, c.C32Duration = 3, 150, 400*time.Millisecond
		c.TputRounds, c.TputSteps, c.TputStep = 1, []int{1, 16, 64}, 300*time.Millisecond
		c.SSEStreams, c.MemStreams, c.MemRounds = []int{1, 64}, 200, 1
	}
	return c
}

// Overhead is the black-box phase's outcome. Times in µs, memory in bytes.
type Overhead struct {
	Rounds int    `json:"rounds"`
	Pinned bool   `json:"pinned"`
	Voided []int  `json:"voided_rounds,omitempty"` // rounds dropped: direct p99 over 2× its floor
	Note   string `json:"note,omitempty"`

	// JSON latency by concurrency ("c1", "c32", and "c1-256KiB" for a
	// request with a long conversation) and arm: the median over rounds of
	// each round's p50 and p99.
	JSON       map[string]map[string]Pcts `json:"json_latency_us"`
	Added      map[string]Added           `json:"json_added_us"`
	JSONRounds []RoundValue               `json:"json_rounds_us"`
	// CPU is each proxy's CPU time per request in the concurrency-32 loops
	// (µs, from /proc/PID/stat); for "direct", the upstream's.
	CPU         map[string]num `json:"cpu_per_request_us"`
	UpstreamCPU num            `json:"upstream_cpu_per_request_us"`

	Throughput map[string]Tput `json:"throughput"`

	// SSE by concurrent streams ("n1", "n64", "n256") and arm.
	SSE      map[string]map[string]SSE `json:"sse"`
	SSEAdded map[string]SSEAdded       `json:"sse_added_us"`

	Memory map[string]Mem `json:"memory"`

	// Handler is the in-process handler's JSON latency (micro arm, see
	// overheadConfig.Handler), by case.
	Handler      map[string]Pcts `json:"handler_json_latency_us,omitempty"`
	HandlerAdded map[string]Pcts `json:"handler_json_added_us,omitempty"`
	HandlerCPU   num             `json:"handler_cpu_per_request_us,omitempty"`
	ServedIdle   *RSS            `json:"served_idle_rss,omitempty"`
	Events       int64           `json:"events_received"` // by the websocket subscriber, whole run
	Requests     int64           `json:"requests_served"` // by subpool, whole run
	Warnings     []string        `json:"warnings,omitempty"`
}

// RoundValue is one round's percentiles for one case and arm.
type RoundValue struct {
	Round int    `json:"round"`
	Case  string `json:"case"`
	Arm   string `json:"arm"`
	P50   num    `json:"p50"`
	P99   num    `json:"p99"`
}

// cpuUse adds up CPU time and the requests it served.
type cpuUse struct {
	cpu      time.Duration
	requests int
}

func (u *cpuUse) add(d time.Duration, n int) { u.cpu += d; u.requests += n }

func (u *cpuUse) perRequest() float64 {
	if u.requests == 0 {
		return math.NaN()
	}
	return float64(u.cpu) / float64(u.requests) / float64(time.Microsecond)
}

// cpuOf is the CPU time so far of the process serving arm a: the proxy's,
// or for direct, the upstream's.
func cpuOf(s *armSet, a *arm) time.Duration {
	pid := s.up.pid()
	if a.proc != nil {
		pid = a.proc.pid()
	}
	d, _ := cpuTime(pid)
	return d
}

// Pcts are latency percentiles in µs.
type Pcts struct {
	P50 num `json:"p50"`
	P99 num `json:"p99"`
}

// Added is the latency a proxy adds over direct: B for the bare proxy,
// P for subpool, and P ÷ B.
type Added struct {
	B50, B99, P50, P99 num
	Ratio50            num `json:"ratio50"`
	Ratio99            num `json:"ratio99"`
}

// addedOf is what the bare proxy and subpool add over direct, from each
// arm's p50 and p99.
func addedOf(m map[string][2]float64) Added {
	b50, b99 := m["bare"][0]-m["direct"][0], m["bare"][1]-m["direct"][1]
	p50, p99 := m["subpool"][0]-m["direct"][0], m["subpool"][1]-m["direct"][1]
	return Added{B50: num(b50), B99: num(b99), P50: num(p50), P99: num(p99),
		Ratio50: num(ratio(p50, b50)), Ratio99: num(ratio(p99, b99))}
}

// Tput is the largest closed-loop throughput whose p99 stayed ≤ 10 ms.
type Tput struct {
	MaxRPS num    `json:"max_rps_p99_le_10ms"`
	AtConc int    `json:"at_concurrency"`
	Steps  []Step `json:"steps"`
}

// Step is one concurrency step (median over rounds).
type Step struct {
	Conc  int `json:"concurrency"`
	RPS   num `json:"rps"`
	P99us num `json:"p99_us"`
}

// SSE is one arm at one stream count (medians over rounds).
type SSE struct {
	TTFB50   num    `json:"ttfb_p50"`
	TTFT50   num    `json:"ttft_p50"`
	TTFT99   num    `json:"ttft_p99"`
	Gap50    num    `json:"gap_p50"`
	Gap99    num    `json:"gap_p99"`
	Delay50  num    `json:"frame_delay_p50"`
	Delay99  num    `json:"frame_delay_p99"`
	Frames   int    `json:"frames"`
	Expected int    `json:"frames_expected"`
	Stalls   int    `json:"stalls_over_2x_interval"`
	Errors   int    `json:"errors"`
	FirstErr string `json:"first_error,omitempty"`
	// Gap99Rounds and TTFT50Rounds are each round's values: how much
	// they move from one round to the next on this machine.
	Gap99Rounds  []num `json:"gap_p99_rounds"`
	TTFT50Rounds []num `json:"ttft_p50_rounds"`

	// StartStalls are the stalls among each stream's first startGaps
	// gaps, while the wave's other streams are still being opened, and
	// Gap99Steady (by round: Gap99SteadyRounds) the p99 of the gaps after
	// those: whether a stall comes from the chunks or from the requests
	// beside them.
	StartStalls       int   `json:"stalls_at_start"`
	Gap99Steady       num   `json:"gap_p99_after_start"`
	Gap99SteadyRounds []num `json:"gap_p99_after_start_rounds,omitempty"`
}

// SSEAdded compares subpool with the bare proxy at one stream count.
// Bare2 is a second bare proxy: Bare2 − Bare is what two identical
// proxies differ by on this machine.
type SSEAdded struct {
	TTFTBare, TTFTSub     num // TTFT p50 − direct
	Gap99Bare, Gap99Sub   num // inter-chunk p99 − direct
	Delay99Bare, Delay99S num // frame delay p99 − direct
	TTFTBare2, Gap99Bare2 num `json:",omitempty"`
}

func sseAddedOf(byArm map[string]SSE) SSEAdded {
	d, b, p := byArm["direct"], byArm["bare"], byArm["subpool"]
	a := SSEAdded{
		TTFTBare: b.TTFT50 - d.TTFT50, TTFTSub: p.TTFT50 - d.TTFT50,
		Gap99Bare: b.Gap99 - d.Gap99, Gap99Sub: p.Gap99 - d.Gap99,
		Delay99Bare: b.Delay99 - d.Delay99, Delay99S: p.Delay99 - d.Delay99,
	}
	if b2, ok := byArm["bare2"]; ok {
		a.TTFTBare2, a.Gap99Bare2 = b2.TTFT50-d.TTFT50, b2.Gap99-d.Gap99
	}
	return a
}

// Mem is one proxy's memory.
type Mem struct {
	IdleRSS   int64 `json:"idle_rss_bytes"` // fresh process, before any request
	Base      int64 `json:"base_rss_bytes"` // fresh process idle for a second, before the streams
	Peak      int64 `json:"peak_rss_bytes"` // with MemStreams slow streams open
	Streams   int   `json:"streams"`
	PerStream int64 `json:"per_stream_bytes"` // median over rounds of (peak − base) ÷ streams
	// After is the RSS a minute after the last round's streams ended, with
	// nothing in flight (subpool only: whether memory goes back).
	After int64 `json:"after_rss_bytes,omitempty"`
	// AfterJSON is the RSS of the process the JSON rounds ran on, right
	// after them (concurrency 1, 32 and the 256 KiB bodies).
	AfterJSON int64 `json:"after_json_rss_bytes,omitempty"`
	// Upload is subpool's RSS around a chunked upload past max_body,
	// after the last round's minute (issue 27).
	Upload *Upload `json:"upload,omitempty"`
}

// Upload is a chunked request body larger than max_body sent to subpool:
// its answer, and the RSS before it, at its peak, and uploadSettle after.
type Upload struct {
	Bytes   int   `json:"bytes"`
	MaxBody int64 `json:"max_body"`
	Status  int   `json:"status"`
	Before  int64 `json:"before_rss_bytes"`
	Peak    int64 `json:"peak_rss_bytes"`
	After   int64 `json:"after_rss_bytes"`
	Settle  int   `json:"after_seconds"`
}

// The upload of issue 27: 50 MB with no length, over the default max_body
// (the bench's homes set none). uploadSettle is long enough for the
// idle watcher's early release after a large body: three checks 5 s
// apart (daemon/idlemem.go).
const (
	uploadBytes  = 50_000_000
	uploadLimit  = policy.DefaultMaxBody
	uploadSettle = 20 * time.Second
)

// jsonCases are the JSON rows: small requests at concurrency 1 and 32,
// and at concurrency 1 a request carrying 256 KiB of conversation.
var jsonCases = []string{"c1", "c32", "c1-256KiB"}

type armSet struct {
	up                   *child
	direct, bare, subpol *arm
	handler              *arm   // nil unless overheadConfig.Handler
	all                  []*arm // direct, bare, subpool: every phase
	// sse adds bare2, a second bare proxy, to the SSE waves: how far two
	// identical proxies land apart here, beside what subpool adds.
	sse      []*arm
	json     []*arm // all, and the handler when present
	served   *served
	children []*child
}

func startArms(cfg overheadConfig) (s *armSet, err error) {
	pin := cfg.Pin
	cpu := func(c string) string {
		if pin {
			return c
		}
		return ""
	}
	s = &armSet{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if s.up, err = startChild("upstream", "", cpu("0")); err != nil {
		return s, err
	}
	s.children = append(s.children, s.up)
	bare, err := startChild("bare", s.up.url, cpu("1"))
	if err != nil {
		return s, err
	}
	s.children = append(s.children, bare)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if s.served, err = startServed(ctx, cfg.Bin, s.up.url, cpu("1")); err != nil {
		return s, err
	}
	bare2, err := startChild("bare", s.up.url, cpu("1"))
	if err != nil {
		return s, err
	}
	s.children = append(s.children, bare2)
	s.direct = newArm("direct", s.up.url, "sk-bench-direct", nil)
	s.bare = newArm("bare", bare.url, "sk-bench-bare", bare)
	s.subpol = newArm("subpool", s.served.url, s.served.clientKey, s.served)
	s.all = []*arm{s.direct, s.bare, s.subpol}
	s.sse = append(s.all[:3:3], newArm("bare2", bare2.url, "sk-bench-bare", bare2))
	s.json = s.all
	if cfg.Handler {
		h, err := startChild("subpool", s.up.url, cpu("1"))
		if err != nil {
			return s, err
		}
		s.children = append(s.children, h)
		s.handler = newArm("handler", h.url, clientKey, h)
		s.json = append(s.all[:3:3], s.handler)
	}
	return s, nil
}

func (s *armSet) stop() {
	if s.served != nil {
		s.served.stop()
	}
	for i := len(s.children) - 1; i >= 0; i-- {
		s.children[i].stop()
	}
}

// overheadRun is one run of the overhead phase: the arms it measures, the
// outcome it fills in, and the random order its rounds take the arms in.
type overheadRun struct {
	cfg  overheadConfig
	arms *armSet
	o    *Overhead
	rng  *rand.Rand
	logf func(string, ...any)
}

// shuffle gives the arms in a fresh random order, so that load from
// elsewhere on the machine does not fall on one arm more than the others.
func (x *overheadRun) shuffle(as []*arm) []*arm {
	out := make([]*arm, len(as))
	for i, j := range x.rng.Perm(len(as)) {
		out[i] = as[j]
	}
	return out
}

func runOverhead(cfg overheadConfig, logf func(string, ...any)) (*Overhead, error) {
	arms, err := startArms(cfg)
	if err != nil {
		return nil, err
	}
	defer arms.stop()
	o := &Overhead{Rounds: cfg.Rounds, Pinned: cfg.Pin, Memory: map[string]Mem{}}
	// Idle: the servers have started and the subscriber is attached; no
	// request has been served yet.
	time.Sleep(time.Second)
	for _, a := range arms.all[1:] {
		rss, _ := a.proc.rss()
		o.Memory[a.name] = Mem{IdleRSS: rss}
	}
	if idle, err := rssOf(arms.served.pid()); err == nil {
		o.ServedIdle = &idle
	}
	x := &overheadRun{cfg: cfg, arms: arms, o: o, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)), logf: logf}
	// Every arm must answer before anything is timed.
	for _, a := range arms.json {
		if r := a.closedLoop(8, 200, 0); r.errors > 0 {
			return nil, fmt.Errorf("%s arm does not answer: %v (subpool serve log: %s)", a.name, r.firstErr, arms.served.log)
		}
	}
	defer func() { o.Events, o.Requests = arms.served.events.Load(), arms.subpol.sent.Load() }()

	rounds, cpu, err := x.jsonRounds()
	if err != nil {
		return nil, err
	}
	// Issue 27: what each proxy holds right after that load.
	for _, a := range arms.all[1:] {
		if v, err := a.proc.rss(); err == nil {
			m := o.Memory[a.name]
			m.AfterJSON = v
			o.Memory[a.name] = m
		}
	}
	x.cpuPerRequest(cpu)
	x.jsonMedians(rounds)
	x.throughput()
	x.sse()
	if err := x.memory(); err != nil {
		return nil, err
	}
	return o, nil
}

// roundJSON is one round's JSON latency: case → arm → p50, p99.
type roundJSON map[string]map[string][2]float64

// jsonRounds measures JSON latency in interleaved rounds. Each round is cut
// into slices and every slice runs every arm (in a fresh random order), so
// a burst of load from elsewhere on the machine lands on all arms alike.
func (x *overheadRun) jsonRounds() ([]roundJSON, map[string]*cpuUse, error) {
	cfg, arms, o, logf := x.cfg, x.arms, x.o, x.logf
	var rounds []roundJSON
	cpu := map[string]*cpuUse{}
	for _, a := range arms.json {
		cpu[a.name] = &cpuUse{}
	}
	const slices = 4
	for r := range cfg.Rounds {
		lat := map[string]map[string][]time.Duration{}
		for _, c := range jsonCases {
			lat[c] = map[string][]time.Duration{}
		}
		for range slices {
			for _, a := range x.shuffle(arms.json) {
				a.closedLoop(8, 40, 0) // warm connections
				c1 := a.closedLoop(1, cfg.C1Requests/slices, 0)
				t0 := cpuOf(arms, a)
				c32 := a.closedLoop(32, 0, cfg.C32Duration/slices)
				cpu[a.name].add(cpuOf(arms, a)-t0, len(c32.lat))
				big := a.withBody(bigBody).closedLoop(1, cfg.C1Requests/4/slices, 0)
				if n := c1.errors + c32.errors + big.errors; n > 0 {
					return nil, nil, fmt.Errorf("%s: %d errors (%v)", a.name, n, firstErr(c1, c32, big))
				}
				lat["c1"][a.name] = append(lat["c1"][a.name], c1.lat...)
				lat["c32"][a.name] = append(lat["c32"][a.name], c32.lat...)
				lat["c1-256KiB"][a.name] = append(lat["c1-256KiB"][a.name], big.lat...)
			}
		}
		rj := roundJSON{}
		for c, byArm := range lat {
			rj[c] = map[string][2]float64{}
			for name, ds := range byArm {
				rj[c][name] = [2]float64{pct(ds, .5), pct(ds, .99)}
			}
		}
		logf("  json round %d: c1 p50 direct %.0f bare %.0f subpool %.0f µs; c32 p50 %.0f %.0f %.0f µs", r+1,
			rj["c1"]["direct"][0], rj["c1"]["bare"][0], rj["c1"]["subpool"][0],
			rj["c32"]["direct"][0], rj["c32"]["bare"][0], rj["c32"]["subpool"][0])
		rounds = append(rounds, rj)
		for _, c := range jsonCases {
			for _, a := range arms.json {
				v := rj[c][a.name]
				o.JSONRounds = append(o.JSONRounds, RoundValue{Round: r + 1, Case: c, Arm: a.name, P50: num(v[0]), P99: num(v[1])})
			}
		}
	}
	return rounds, cpu, nil
}

// cpuPerRequest keeps each arm's CPU per request over the concurrency-32
// loops; the direct arm's is the upstream's alone.
func (x *overheadRun) cpuPerRequest(cpu map[string]*cpuUse) {
	o := x.o
	o.CPU = map[string]num{}
	for name, u := range cpu {
		if name == "handler" {
			o.HandlerCPU = num(u.perRequest())
			continue
		}
		o.CPU[name] = num(u.perRequest())
	}
	o.UpstreamCPU = num(cpu["direct"].perRequest())
}

// jsonMedians takes each arm's median over the rounds kept, after voiding
// the rounds in which the machine was plainly busier than at its best.
func (x *overheadRun) jsonMedians(rounds []roundJSON) {
	arms, o := x.arms, x.o
	floor := math.Inf(1)
	for _, rj := range rounds {
		floor = min(floor, rj["c1"]["direct"][1])
	}
	var kept []roundJSON
	for i, rj := range rounds {
		if rj["c1"]["direct"][1] > 2*floor {
			o.Voided = append(o.Voided, i+1)
			continue
		}
		kept = append(kept, rj)
	}
	if len(kept) < 3 {
		kept, o.Voided = rounds, nil
		o.Note = "too many rounds over 2× the direct floor to void any; the machine was busy"
	}
	o.JSON = map[string]map[string]Pcts{}
	o.Added = map[string]Added{}
	for _, c := range jsonCases {
		o.JSON[c] = map[string]Pcts{}
		m := map[string][2]float64{}
		for _, a := range arms.all {
			var p50, p99 []float64
			for _, rj := range kept {
				p50 = append(p50, rj[c][a.name][0])
				p99 = append(p99, rj[c][a.name][1])
			}
			m[a.name] = [2]float64{median(p50), median(p99)}
			o.JSON[c][a.name] = Pcts{num(m[a.name][0]), num(m[a.name][1])}
		}
		o.Added[c] = addedOf(m)
		if arms.handler != nil {
			var p50, p99 []float64
			for _, rj := range kept {
				p50 = append(p50, rj[c]["handler"][0])
				p99 = append(p99, rj[c]["handler"][1])
			}
			if o.Handler == nil {
				o.Handler, o.HandlerAdded = map[string]Pcts{}, map[string]Pcts{}
			}
			h := Pcts{num(median(p50)), num(median(p99))}
			o.Handler[c] = h
			o.HandlerAdded[c] = Pcts{num(float64(h.P50) - m["direct"][0]), num(float64(h.P99) - m["direct"][1])}
		}
	}
}

// throughput steps the concurrency and keeps, per arm, the best rate whose
// p99 stays within 10 ms.
func (x *overheadRun) throughput() {
	cfg, arms, o, logf := x.cfg, x.arms, x.o, x.logf
	o.Throughput = map[string]Tput{}
	if !cfg.Throughput {
		cfg.TputRounds = 0
	}
	tp := map[string]map[int][][2]float64{} // arm → conc → rounds of (rps, p99)
	for _, a := range arms.all {
		tp[a.name] = map[int][][2]float64{}
	}
	for r := range cfg.TputRounds {
		for _, c := range cfg.TputSteps {
			for _, a := range x.shuffle(arms.all) {
				res := a.closedLoop(c, 0, cfg.TputStep)
				tp[a.name][c] = append(tp[a.name][c], [2]float64{res.rps(), pct(res.lat, .99)})
			}
		}
		logf("  throughput round %d done", r+1)
	}
	for _, a := range arms.all {
		var t Tput
		best := math.NaN()
		for _, c := range cfg.TputSteps {
			var rps, p99 []float64
			for _, x := range tp[a.name][c] {
				rps, p99 = append(rps, x[0]), append(p99, x[1])
			}
			st := Step{Conc: c, RPS: num(median(rps)), P99us: num(median(p99))}
			t.Steps = append(t.Steps, st)
			if float64(st.P99us) <= 10000 && (math.IsNaN(best) || float64(st.RPS) > best) {
				best, t.AtConc = float64(st.RPS), c
			}
		}
		t.MaxRPS = num(best)
		o.Throughput[a.name] = t
	}
	if !cfg.Throughput {
		o.Throughput = nil
	}
}

// startGaps is how many of a stream's first gaps are told apart as its
// start: a wave opens its streams over one interval, so a stream's first
// gaps share the machine with the other streams' requests (accept, body,
// upstream dial, headers) rather than with their chunks only.
const startGaps = 3

// splitGaps parts one stream's gaps at startGaps: the gaps after its start,
// and its stalls (gaps over twice the interval), all and at the start.
func splitGaps(gaps []time.Duration) (after []time.Duration, stalls, atStart int) {
	for i, g := range gaps {
		if g > 2*sseInterval {
			stalls++
			if i < startGaps {
				atStart++
			}
		}
	}
	return gaps[min(startGaps, len(gaps)):], stalls, atStart
}

// sse times waves of streams through every streaming arm, in rounds.
func (x *overheadRun) sse() {
	cfg, arms, o, logf := x.cfg, x.arms, x.o, x.logf
	o.SSE = map[string]map[string]SSE{}
	o.SSEAdded = map[string]SSEAdded{}
	type sseRound struct{ ttfb50, ttft50, ttft99, gap50, gap99, steady99, d50, d99 []float64 }
	acc := map[string]map[string]*sseRound{}
	totals := map[string]map[string]*SSE{}
	for _, n := range cfg.SSEStreams {
		k := fmt.Sprintf("n%d", n)
		acc[k], totals[k] = map[string]*sseRound{}, map[string]*SSE{}
		for _, a := range arms.sse {
			acc[k][a.name], totals[k][a.name] = &sseRound{}, &SSE{}
		}
	}
	for r := range cfg.Rounds {
		for _, n := range cfg.SSEStreams {
			for _, a := range x.shuffle(arms.sse) {
				k := fmt.Sprintf("n%d", n)
				res := a.wave(n, false, sseInterval, nil)
				if n == 1 {
					// One stream gives one TTFT: take two per round.
					res = append(res, a.wave(n, false, sseInterval, nil)...)
				}
				var ttfb, ttft, gaps, steady, delays []time.Duration
				t := totals[k][a.name]
				for _, s := range res {
					t.Expected += sseChunks + 6
					if err := s.broken(sseChunks + 6); err != nil {
						t.Errors++
						if t.FirstErr == "" {
							t.FirstErr = err.Error()
						}
					}
					t.Frames += s.frames
					if s.ttft == 0 {
						continue // broke before its first delta: counted above, not timed
					}
					ttfb, ttft = append(ttfb, s.ttfb), append(ttft, s.ttft)
					gaps, delays = append(gaps, s.gaps...), append(delays, s.delays...)
					after, stalls, atStart := splitGaps(s.gaps)
					steady = append(steady, after...)
					t.Stalls, t.StartStalls = t.Stalls+stalls, t.StartStalls+atStart
				}
				x := acc[k][a.name]
				x.ttfb50 = append(x.ttfb50, pct(ttfb, .5))
				x.ttft50, x.ttft99 = append(x.ttft50, pct(ttft, .5)), append(x.ttft99, pct(ttft, .99))
				x.gap50, x.gap99 = append(x.gap50, pct(gaps, .5)), append(x.gap99, pct(gaps, .99))
				x.steady99 = append(x.steady99, pct(steady, .99))
				x.d50, x.d99 = append(x.d50, pct(delays, .5)), append(x.d99, pct(delays, .99))
			}
		}
		post(arms.up.url + pathReset)
		logf("  sse round %d done", r+1)
	}
	for k, byArm := range acc {
		o.SSE[k] = map[string]SSE{}
		for name, x := range byArm {
			s := *totals[k][name]
			s.TTFB50, s.TTFT50, s.TTFT99 = num(median(x.ttfb50)), num(median(x.ttft50)), num(median(x.ttft99))
			s.Gap50, s.Gap99 = num(median(x.gap50)), num(median(x.gap99))
			s.Gap99Steady = num(median(x.steady99))
			s.Delay50, s.Delay99 = num(median(x.d50)), num(median(x.d99))
			for i := range x.gap99 {
				s.Gap99Rounds = append(s.Gap99Rounds, num(x.gap99[i]))
				s.TTFT50Rounds = append(s.TTFT50Rounds, num(x.ttft50[i]))
				s.Gap99SteadyRounds = append(s.Gap99SteadyRounds, num(x.steady99[i]))
			}
			o.SSE[k][name] = s
		}
		o.SSEAdded[k] = sseAddedOf(o.SSE[k])
	}
}

// memory holds slow streams open and samples RSS while they run. Each
// round starts each proxy afresh: a process that has served the phases
// before keeps the heap they grew (no forced GC: the served binary has
// no hook for one), and the streams then fill it without raising the
// RSS, which made this figure swing from 0.1× to 2.5× between runs.
// afterLoad is how long after a load its RSS is read again.
const afterLoad = time.Minute

func (x *overheadRun) memory() error {
	cfg, arms, o, logf := x.cfg, x.arms, x.o, x.logf
	per := map[string][]float64{}
	for r := range cfg.MemRounds {
		for _, name := range x.rng.Perm(2) {
			a, stop, err := freshArm(cfg, arms.up.url, []string{"bare", "subpool"}[name])
			if err != nil {
				return err
			}
			time.Sleep(time.Second) // started, subscriber attached, idle
			base, _ := a.proc.rss()
			peak := base
			res := a.wave(cfg.MemStreams, true, slowInterval, func() {
				if v, err := a.proc.rss(); err == nil {
					peak = max(peak, v)
				}
			})
			after := int64(0)
			var up *Upload
			if r == cfg.MemRounds-1 {
				// A minute after a load, beside the bare proxy's: what
				// the idle release (daemon/idlemem.go) earns.
				time.Sleep(afterLoad)
				after, _ = a.proc.rss()
				if a.name == "subpool" {
					up = uploadPastLimit(a, logf)
				}
			}
			stop()
			bad, why := 0, ""
			for _, s := range res {
				if s.err != nil || s.frames != slowChunks+6 {
					bad++
					if why == "" {
						why = fmt.Sprintf("%d frames, %v", s.frames, s.err)
					}
				}
			}
			if bad > 0 {
				logf("  memory: %s: %d of %d slow streams incomplete (%s)", a.name, bad, cfg.MemStreams, why)
			}
			m := o.Memory[a.name]
			m.Base, m.Peak, m.Streams = base, peak, cfg.MemStreams
			if after > 0 {
				m.After = after
			}
			if up != nil {
				m.Upload = up
			}
			o.Memory[a.name] = m
			per[a.name] = append(per[a.name], float64(peak-base)/float64(cfg.MemStreams))
		}
		post(arms.up.url + pathReset)
		logf("  memory round %d done", r+1)
	}
	for name, v := range per {
		m := o.Memory[name]
		m.PerStream = int64(median(v))
		o.Memory[name] = m
	}
	return nil
}

// uploadPastLimit sends subpool a chunked body over max_body and samples
// its RSS before, during (every 100 ms) and uploadSettle after the answer.
func uploadPastLimit(a *arm, logf func(string, ...any)) *Upload {
	u := &Upload{Bytes: uploadBytes, MaxBody: uploadLimit, Settle: int(uploadSettle / time.Second)}
	u.Before, _ = a.proc.rss()
	u.Peak = u.Before
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if u.Status, err = a.upload(uploadBytes); err != nil {
			logf("  memory: the %d-byte upload: %v", uploadBytes, err)
		}
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for sampling := true; sampling; {
		select {
		case <-done:
			sampling = false
		case <-t.C:
		}
		if v, err := a.proc.rss(); err == nil {
			u.Peak = max(u.Peak, v)
		}
	}
	time.Sleep(uploadSettle)
	u.After, _ = a.proc.rss()
	logf("  memory: a %d MB chunked upload answered %d; subpool's RSS %s before, %s at the peak, %s %s after",
		u.Bytes/1_000_000, u.Status, mib(u.Before), mib(u.Peak), mib(u.After), uploadSettle)
	return u
}

// freshArm starts a new bare proxy or `subpool serve` (as startArms does)
// in front of upstream, for the memory rounds.
func freshArm(cfg overheadConfig, upstream, name string) (*arm, func(), error) {
	pin := ""
	if cfg.Pin {
		pin = "1"
	}
	if name == "bare" {
		c, err := startChild("bare", upstream, pin)
		if err != nil {
			return nil, nil, err
		}
		return newArm("bare", c.url, "sk-bench-bare", c), c.stop, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := startServed(ctx, cfg.Bin, upstream, pin)
	if err != nil {
		return nil, nil, err
	}
	return newArm("subpool", s.url, s.clientKey, s), s.stop, nil
}

func firstErr(rs ...loadResult) error {
	for _, r := range rs {
		if r.firstErr != nil {
			return r.firstErr
		}
	}
	return nil
}
