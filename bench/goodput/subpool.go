package goodput

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// subpoolConfig is the part of proxy.Options and pool.Config the policy
// depends on; zero fields take the proxy's defaults (config.toml's).
type subpoolConfig struct {
	MaxAttempts      int
	TransientBackoff []time.Duration
	SoleProviderMax  time.Duration
	CapacityMax      time.Duration
	Pool             pool.Config
	// Jitter pins capacity back-off's jitter (the conformance test);
	// nil draws from a generator seeded by the scenario.
	Jitter func() float64
	// Tweak, when set, is a proposed change to the policy (whatif.go);
	// nil is subpool as it is.
	Tweak *Tweak
}

func (c *subpoolConfig) defaults() {
	def := policy.Defaults()
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = def.MaxAttempts
	}
	if c.TransientBackoff == nil {
		c.TransientBackoff = def.TransientBackoff
	}
	if c.SoleProviderMax == 0 {
		c.SoleProviderMax = def.SoleProviderMax
	}
	if c.CapacityMax == 0 {
		c.CapacityMax = def.CapacityMax
	}
}

// subpool is subpool's policy: the real proxy/pool (ladder, scopes,
// selection, parks) on the virtual clock, the real classify verdicts of
// the upstream's answers, the real decisions of proxy/policy and the
// pool's books kept by the engine's own pool.Apply. Only the carrying out
// is this simulator's: proxy/attempt.go's run.carryOut and
// run.lease as callbacks on the world instead of a goroutine that sleeps;
// conformance_test.go replays scripted traffic through the real proxy and
// through this one and requires the same upstream calls.
type subpool struct {
	e    *env
	cfg  subpoolConfig
	pool *pool.Pool
	prov string
	jit  func() float64
	ids  map[string]int

	policy   policy.Config
	inFlight map[string]int // leases held, for tweaks
	leases   map[*pool.Lease]bool
	model    map[*pool.Lease]string // the model each held lease is for
	state    any                    // the tweak's own

	// Requests waiting for the pool, and the pool.Changed channel taken
	// before the Pick that refused them: wake runs them all when it closes.
	waiting []*poolWait
	changed <-chan struct{}
}

// poolWait is one request waiting for the pool: woken when the pool says
// something may be ready, or at its time limit, whichever comes first.
type poolWait struct {
	start time.Time
	timer *event
	done  bool
	then  func(waited time.Duration)
	// model, and plain: the request excludes no credential. Once a
	// plain waiter for a model is refused again, every other plain one
	// for it would be too.
	model string
	plain bool
}

func (w *poolWait) fire(now time.Time) {
	if w.done {
		return
	}
	w.done = true
	w.timer.dead = true
	w.then(now.Sub(w.start))
}

// wake is the world's settle hook: once the channel the waiters hold is
// closed, each of them Picks again (those refused again wait anew, on the
// channel the pool hands out then).
func (s *subpool) wake() {
	if len(s.waiting) == 0 {
		return
	}
	select {
	case <-s.changed:
	default:
		return
	}
	ws := s.waiting
	s.waiting = nil
	now := s.e.w.Now()
	// A shortcut of the simulator's, not a decision: in the proxy every
	// waiter wakes and Picks, and those Picks would be refused alike.
	// Skipping them keeps a run with hundreds of waiters fast; the
	// skipped keep their place and their time limit.
	refused := map[string]bool{}
	for _, w := range ws {
		if w.plain && refused[w.model] {
			s.waiting = append(s.waiting, w)
			continue
		}
		n := len(s.waiting)
		w.fire(now)
		if w.plain && len(s.waiting) > n {
			refused[w.model] = true
		}
	}
}

func startSubpool(cfg subpoolConfig) func(e *env) func(r *request) {
	return func(e *env) func(r *request) {
		cfg.defaults()
		s := &subpool{e: e, cfg: cfg, prov: e.sc.Provider, ids: map[string]int{}, inFlight: map[string]int{}, leases: map[*pool.Lease]bool{}, model: map[*pool.Lease]string{}}
		s.policy = policy.Config{TransientBackoff: cfg.TransientBackoff, CapacityMax: cfg.CapacityMax,
			MaxAttempts: cfg.MaxAttempts, SoleProviderMax: cfg.SoleProviderMax, MaxPoolWaits: policy.Defaults().MaxPoolWaits}
		s.pool = pool.New(e.w, cfg.Pool, nil)
		s.pool.SetProvider(s.prov, e.prof.LimitScope)
		for i := range e.sc.Creds {
			id := credID(i)
			s.ids[id] = i
			s.pool.Add(pool.Credential{ID: id, Provider: s.prov, Label: id, Kind: api.KindAPIKey})
		}
		s.jit = cfg.Jitter
		if s.jit == nil {
			rng := rand.New(rand.NewPCG(e.sc.Seed, 17))
			s.jit = rng.Float64
		}
		if cfg.Tweak != nil && cfg.Tweak.init != nil {
			s.state = cfg.Tweak.init(s)
		}
		e.w.settle = s.wake
		return func(r *request) { (&spRun{s: s, r: r}).loop() }
	}
}

// acquired and release keep count of the leases each credential holds,
// which the tweaks read; Lease.Release itself is idempotent, so is this.
func (rn *spRun) acquired(l *pool.Lease) *pool.Lease {
	rn.s.leases[l] = true
	rn.s.model[l] = rn.r.model
	rn.s.inFlight[l.Credential.ID]++
	if tw := rn.s.cfg.Tweak; tw != nil && tw.leased != nil {
		tw.leased(rn.s, l)
	}
	return l
}

func (rn *spRun) release(l *pool.Lease) {
	if rn.s.leases[l] {
		delete(rn.s.leases, l)
		delete(rn.s.model, l)
		rn.s.inFlight[l.Credential.ID]--
	}
	l.Release()
}

// spRun is attempt.go's run: one request's attempts and waits.
type spRun struct {
	s *subpool
	r *request

	attempts   int
	pinned     string
	exclude    map[string]bool
	refreshed  map[string]bool
	transient  map[string]int
	capSince   time.Time
	capWaits   int
	soleWaited time.Duration
	waits      int
}

// loop is run.loop up to the attempt; the answer comes back in answered.
func (rn *spRun) loop() {
	rn.lease(func(l *pool.Lease) {
		// API keys: Auth never fails and never needs a refresh.
		rn.attempts++
		rn.s.e.attempt(rn.r, rn.s.ids[l.Credential.ID], func(a answer) { rn.answered(l, a) })
	})
}

// answered is run.loop from the response on: utilization, verdict,
// budget, act.
func (rn *spRun) answered(l *pool.Lease, a answer) {
	s := rn.s
	now := s.e.w.Now()
	if q, ok := classify.ReadWindows(a.resp.Header, now); ok {
		s.pool.SetQuota(l.Credential.ID, q)
	}
	v := classify.Verdict{Class: classify.OK}
	if !a.ok {
		v = classify.Classify(s.e.prof, a.resp, now)
	}
	if v.Class != classify.RateLimit {
		if n, reset, ok := classify.ParseBudget(a.resp.Header, now); ok {
			s.pool.SetBudget(l.Credential.ID, rn.r.model, n, reset)
		}
	}
	if tw := s.cfg.Tweak; tw != nil && tw.answered != nil {
		tw.answered(s, l, a, &v)
	}
	rn.act(l, a, v)
}

// act carries out proxy/policy's decision on the verdict, as run.try
// and run.carryOut do in proxy/attempt.go: the decisions and the pool's
// books (pool.Apply) are the proxy's own functions, only the carrying out
// is this simulator's.
func (rn *spRun) act(l *pool.Lease, a answer, v classify.Verdict) {
	s := rn.s
	pl := s.pool
	id := l.Credential.ID
	st := policy.Attempt{
		Attempts: rn.attempts, Model: rn.r.model, Retries: rn.transient[id],
		Refreshed: rn.refreshed[id], Provider: s.prov,
	}
	if !a.ok {
		st.Status = a.resp.Status
	}
	if v.Class == classify.Capacity {
		now := s.e.w.Now()
		if rn.capSince.IsZero() {
			rn.capSince = now
		}
		st.CapacityElapsed, st.CapacityWaits, st.Jitter = now.Sub(rn.capSince), rn.capWaits, s.jit()
	}
	act := policy.Decide(s.policy, st, v)
	pl.Apply(id, rn.r.model, "", act, v) // the engine's own books (run.try)

	// run.carryOut
	switch act.Kind {
	case policy.Pass:
		// deliver: Confirm at the headers, the lease held to the last
		// byte, then Record.
		pl.Confirm(id, rn.r.model)
		s.e.serve(rn.r, func() {
			pl.Record(id, true, false)
			rn.release(l)
		})
	case policy.Rotate:
		rn.release(l)
		rn.pinned = ""
		rn.loop()
	case policy.Retry:
		if rn.transient == nil {
			rn.transient = map[string]int{}
		}
		rn.transient[id]++
		// The slot is kept through the pause.
		s.e.wait(rn.r, act.Delay, func() {
			rn.release(l)
			rn.pinned = id
			rn.loop()
		})
	case policy.WaitCapacity:
		rn.release(l)
		rn.capWaits++
		s.e.wait(rn.r, act.Delay, func() {
			rn.pinned = id
			rn.loop()
		})
	case policy.Refresh:
		// API keys only here: policy never asks them to refresh.
		rn.release(l)
		s.e.fail(rn.r, "refresh asked of an API key")
	default: // relay, fail, stop: the client has its answer
		rn.release(l)
		s.e.fail(rn.r, act.Kind.String()+": "+string(v.Class))
	}
}

// lease is run.lease: pinned credential first, then Pick, else wait for
// the pool (woken by pool.Changed, bounded by a cooldown short enough or
// by sole_provider_max while credentials are busy), else refuse.
func (rn *spRun) lease(got func(*pool.Lease)) {
	s := rn.s
	// Taken before Pick, as pool.Changed's doc says: in this single-
	// threaded world nothing can change in between, but the order is the
	// proxy's.
	changed := s.pool.Changed()
	if rn.pinned != "" {
		if l, err := s.pool.Acquire(rn.pinned, rn.r.model); err == nil {
			got(rn.acquired(l))
			return
		}
		rn.pinned = ""
	}
	exclude, held := rn.exclude, 0
	if tw := s.cfg.Tweak; tw != nil && tw.hold != nil {
		// A proposed change: credentials held back by it are left out
		// of Pick and count as busy; preferred ones are tried first.
		hard, prefer := tw.hold(s, rn.r.model)
		held = len(hard)
		exclude = union(rn.exclude, hard)
		if len(prefer) > 0 {
			only := map[string]bool{}
			for i := range s.e.sc.Creds {
				if id := credID(i); !prefer[id] {
					only[id] = true
				}
			}
			if l, err := s.pool.Pick(pool.PickRequest{Provider: s.prov, Model: rn.r.model, Exclude: union(exclude, only)}); err == nil {
				got(rn.acquired(l))
				return
			}
		}
	}
	l, err := s.pool.Pick(pool.PickRequest{Provider: s.prov, Model: rn.r.model, Exclude: exclude})
	if err == nil {
		got(rn.acquired(l))
		return
	}
	var u *pool.Unavailable
	if !errors.As(err, &u) || u.Total == 0 {
		s.e.fail(rn.r, "refused: no credentials")
		return
	}
	// run.lease: proxy/policy says whether to wait. The pool closes the
	// channel at NextReady (a cooldown's end, a spent budget's reset, an
	// outage's next probe) and at every release.
	busy := u.Busy
	if held > 0 && u.Excluded > 0 {
		busy += u.Excluded // held back by a tweak: frees up like a busy one
	}
	act := policy.WhenUnavailable(s.policy, policy.Waited{Total: rn.soleWaited, Count: rn.waits},
		policy.Unavailable{Total: u.Total, Busy: busy, NextReady: u.NextReady, HasNext: u.HasNext})
	if act.Kind != policy.WaitPool {
		s.e.fail(rn.r, "refused: "+act.Kind.String())
		return
	}
	w := &poolWait{start: s.e.w.Now(), model: rn.r.model, plain: len(exclude) == 0, then: func(waited time.Duration) {
		rn.soleWaited += waited
		rn.waits++
		rn.r.waited += waited
		rn.lease(got)
	}}
	w.timer = s.e.w.after(act.Delay, func() { w.fire(s.e.w.Now()) })
	s.waiting = append(s.waiting, w)
	s.changed = changed
}
