package goodput

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Scenario is one traffic pattern against one pool. Every strategy sees
// the same arrivals (same seed) against its own fresh upstream.
type Scenario struct {
	Name  string // short id, used in results.json
	Title string // one line for the report

	// Provider is "anthropic" or "openai": the wire shape of the
	// upstream's answers and the classify profile.
	Provider string
	Creds    int
	// Window is each credential's quota window; windows are fixed and
	// staggered, credential i's starting i·Window/Creds after the epoch.
	Window time.Duration
	// Models is the traffic mix. Each model's arrivals are Poisson at
	// Load × Creds × Quota / Window. Without PerModel limits, all models
	// draw on one bucket per credential of Models[0].Quota.
	Models   []Model
	PerModel bool
	// Announce: a refusal over quota says when the window resets.
	Announce bool
	// Subscription: answers carry Anthropic's unified (5h) window headers,
	// utilization on every success, as subscriptions do; otherwise the
	// API-key shape (retry-after, anthropic-ratelimit-requests-*).
	Subscription bool

	Duration time.Duration // arrivals span [0, Duration)
	Deaths   []Death       // credentials that start answering 401
	Outages  []Span        // every credential answers 429 (pool-wide limit)
	Storms   []Span        // every credential answers 529 (capacity)
	Faults   []Span        // every credential answers 500 (a transient server error)

	// Latencies of the upstream: a refusal arrives after ErrLatency; a
	// success's headers after TTFB and its last byte Stream later.
	ErrLatency, TTFB, Stream time.Duration

	Seed uint64
}

// Model is one model's share of the traffic.
type Model struct {
	Name  string
	Quota int     // requests per credential per window
	Load  float64 // offered rate ÷ the pool's capacity for this model
}

// Death makes credential Cred answer 401 (key revoked) from At on.
type Death struct {
	Cred int
	At   time.Duration
}

// Span is [Start, Start+Len) after the epoch.
type Span struct {
	Start, Len time.Duration
	Announce   bool // outages only: the 429 carries retry-after to the end
}

func (s Span) holds(t time.Duration) bool { return t >= s.Start && t < s.Start+s.Len }

func (sc *Scenario) defaults() {
	if sc.ErrLatency == 0 {
		sc.ErrLatency = 200 * time.Millisecond
	}
	if sc.TTFB == 0 {
		sc.TTFB = 800 * time.Millisecond
	}
	if sc.Stream == 0 {
		sc.Stream = 3 * time.Second
	}
	if sc.Provider == "" {
		sc.Provider = "anthropic"
	}
}

// phase is where credential i's windows start.
func (sc *Scenario) phase(i int) time.Duration {
	return (sc.Window / time.Duration(sc.Creds) * time.Duration(i)).Truncate(time.Second)
}

// arrival is one client request as generated.
type arrival struct {
	at    time.Duration
	model string
}

// arrivals draws the merged Poisson arrivals of every model.
func (sc *Scenario) arrivals() []arrival {
	rng := rand.New(rand.NewPCG(sc.Seed, 0x9e3779b97f4a7c15))
	var out []arrival
	for _, m := range sc.Models {
		rate := m.Load * float64(sc.Creds*m.Quota) / sc.Window.Seconds() // per second
		if rate <= 0 {
			continue
		}
		t := 0.0
		for {
			t += rng.ExpFloat64() / rate
			at := time.Duration(t * float64(time.Second)).Round(time.Millisecond)
			if at >= sc.Duration {
				break
			}
			out = append(out, arrival{at: at, model: m.Name})
		}
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	return out
}

func (sc *Scenario) quota(model string) int {
	if sc.PerModel {
		for _, m := range sc.Models {
			if m.Name == model {
				return m.Quota
			}
		}
	}
	return sc.Models[0].Quota
}

func (sc *Scenario) bucket(model string) string {
	if sc.PerModel {
		return model
	}
	return ""
}

func (sc *Scenario) deadAt(cred int) (time.Duration, bool) {
	for _, d := range sc.Deaths {
		if d.Cred == cred {
			return d.At, true
		}
	}
	return 0, false
}

// Scenarios is the set `make bench` runs. scale shrinks durations for a
// quick run (1 = full).
func Scenarios(scale float64) []*Scenario {
	dur := func(d time.Duration) time.Duration {
		return time.Duration(math.Round(float64(d)*scale/float64(time.Minute))) * time.Minute
	}
	sonnet := func(quota int, load float64) []Model {
		return []Model{{Name: "claude-sonnet-4-5", Quota: quota, Load: load}}
	}
	list := []*Scenario{
		{Name: "steady-announced", Title: "1.5× the pool's quota, 8 API keys × 30 req / 5 min, resets announced",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 1.5), Announce: true, Duration: dur(2 * time.Hour), Seed: 1},
		{Name: "steady-silent", Title: "1.5× the pool's quota, 8 API keys × 30 req / 5 min, bare 429s (no reset time)",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 1.5), Duration: dur(2 * time.Hour), Seed: 2},
		{Name: "steady-5h", Title: "1.5× the pool's quota, 8 subscriptions × 50 req / 5 h, unified headers with utilization",
			Creds: 8, Window: 5 * time.Hour, Models: sonnet(50, 1.5), Announce: true, Subscription: true, Duration: dur(24 * time.Hour), Seed: 3},
		{Name: "dead-credential", Title: "0.75× quota; one key revoked (permanent 401) after 15 min",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 0.75), Announce: true, Duration: dur(time.Hour),
			Deaths: []Death{{Cred: 3, At: 15 * time.Minute}}, Seed: 4},
		{Name: "outage", Title: "0.5× quota; every key answers bare 429 for 60 s (pool-wide limit)",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 0.5), Announce: true, Duration: dur(30 * time.Minute),
			Outages: []Span{{Start: 10 * time.Minute, Len: time.Minute}}, Seed: 5},
		{Name: "outage-announced", Title: "0.5× quota; every key answers 429 with retry-after for 60 s",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 0.5), Announce: true, Duration: dur(30 * time.Minute),
			Outages: []Span{{Start: 10 * time.Minute, Len: time.Minute, Announce: true}}, Seed: 5},
		{Name: "capacity-storms", Title: "0.5× quota; 529 overloaded for everyone, 45 s bursts every 10 min",
			Creds: 8, Window: 5 * time.Minute, Models: sonnet(30, 0.5), Announce: true, Duration: dur(time.Hour), Seed: 6},
		{Name: "mixed-models", Title: "OpenAI per-model limits: gpt-4.1 at 1.5× its quota, gpt-4.1-mini at 0.5×",
			Provider: "openai", Creds: 8, Window: time.Minute, PerModel: true, Announce: true, Duration: dur(30 * time.Minute),
			Models: []Model{{Name: "gpt-4.1", Quota: 5, Load: 1.5}, {Name: "gpt-4.1-mini", Quota: 20, Load: 0.5}}, Seed: 7},
	}
	for _, sc := range list {
		if sc.Name == "capacity-storms" {
			for t := 5 * time.Minute; t < sc.Duration; t += 10 * time.Minute {
				sc.Storms = append(sc.Storms, Span{Start: t, Len: 45 * time.Second})
			}
		}
		sc.defaults()
	}
	return list
}

func (sc *Scenario) String() string { return fmt.Sprintf("%s (%s)", sc.Name, sc.Title) }
