package view

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// TrayState is the one word the tray icon shows.
type TrayState string

const (
	TrayReady     TrayState = "ready"     // every credential ready
	TrayCooling   TrayState = "cooling"   // something cools down or waits; it passes on its own
	TrayAttention TrayState = "attention" // the user must act: log in, billing, a provider exhausted
	TrayOffline   TrayState = "offline"   // no live link to the proxy
)

// Level grades a badge or a meter. The panel maps it to a colour and always
// shows words beside it, so colour is never the only signal.
type Level int

const (
	LevelNeutral Level = iota // paused, unknown
	LevelGood                 // ready; usage under 70 %
	LevelInfo                 // cooling or waiting: passes on its own
	LevelWarn                 // usage under 90 %; one model out
	LevelBad                  // usage 90 % and over; needs the user
)

// Usage thresholds for the meter colours.
const (
	warnAt = 0.70
	badAt  = 0.90
)

// UsageLevel grades a 0..1 usage fraction.
func UsageLevel(used float64) Level {
	switch {
	case used >= badAt:
		return LevelBad
	case used >= warnAt:
		return LevelWarn
	}
	return LevelGood
}

// Badge is the short state word on a row.
type Badge struct {
	Text  string
	Level Level
}

// Row is one credential.
type Row struct {
	ID       string
	Label    string
	Provider string
	Kind     string // api.KindAPIKey or api.KindOAuth; empty when unknown
	Detail   string // "subscription · imported from Claude Code"
	Badge    Badge
	// Line is what the row says under its badge: why it is out and for how
	// long. Empty when the badge and the meters say it all (ready, paused).
	Line string
	// Menu is the row's state on the tray menu after its label.
	Menu string
	// Counting is set while a cooldown runs down; Countdown is then the
	// remaining fraction: 1 at the start, 0 at the end.
	Counting  bool
	Countdown float64
	// Meters are the credential's usage windows, one bar each.
	Meters []Meter
	Reason string // the last reason, in plain words
	Counts string // "128 requests · 3 errors · 2 rate limits"

	// Reserve is the share of the binding window kept for the person, in
	// percent (the login's own setting or [usage] reserve); 0 when none.
	Reserve int

	// Paused decides between the Pause and Resume button.
	Paused bool
	// Which actions apply now; all false while the link is down.
	CanPause, CanResume, CanReset, CanRemove, CanRelogin bool
	// CanReserve: a subscription, whose reserve the person may set.
	CanReserve bool
	// ReloginText names the fix: "Log in again" for a login, "Replace key"
	// for a refused API key.
	ReloginText string

	// Serves says which tools the credential takes requests from:
	// "Claude Code only", "all tools", "all tools (opted in)".
	Serves string
	// OwnTool is the tool a subscription login is kept for by default
	// (api.SubscriptionTool), "" when it serves every tool anyway.
	// OtherTools: the person opened it to every tool.
	OwnTool    string
	OtherTools bool
	// CanSetTools: a login kept for its own tool, which the person may
	// open to every tool or close again.
	CanSetTools bool
	// ToolsWarning is what the person is told before opening the login to
	// other tools: what its provider bills for that. Empty when nothing.
	ToolsWarning string
}

// Section is one provider.
type Section struct {
	Name    string
	Title   string // "Claude"
	Summary string // "2 of 3 ready", "none ready · next in 1m12s"
	Level   Level
	Notes   []string // provider-wide cooldowns, waits, fallbacks
	Rows    []Row
}

// View is everything the tray and the panel draw at one instant.
type View struct {
	Tray    TrayState
	Summary string // "3 ready · 1 cooling"
	Conn    Conn
	// Banner explains an offline or refused link; empty while online.
	Banner string
	// ReadOnly: no action can reach the proxy, so every button is off.
	ReadOnly bool
	Address  string
	Sections []Section
	Events   []string // newest first
	// Ticking: something on screen counts down, so redraw every second.
	Ticking bool
	// Minutely: something on screen changes by the minute (a window's
	// "resets in 2h 13m"), so redraw at least once a minute.
	Minutely bool
	// Credentials the menu's Pause all / Resume all act on.
	PauseIDs  []string
	ResumeIDs []string
	// Providers the add-key form offers.
	Providers []string
}

func (m *Model) address() string {
	if m.Address != "" {
		return m.Address
	}
	return m.status.Listen
}

func (m *Model) stamp(t time.Time) string { return t.In(m.loc()).Format("15:04:05") }

// View computes what to draw at now. It does not change the model.
func (m *Model) View(now time.Time) View {
	v := View{Conn: m.conn, Address: m.address(), ReadOnly: m.conn != Online}
	var attention, cooling bool
	var n Tally
	for i := range m.status.Providers {
		p := &m.status.Providers[i]
		v.Providers = append(v.Providers, p.Name)
		s, f := m.section(p, now, v.ReadOnly)
		v.Sections = append(v.Sections, s)
		attention = attention || f.attention
		cooling = cooling || f.cooling
		v.Ticking = v.Ticking || f.ticking
		v.Minutely = v.Minutely || f.slow
		n = n.Plus(TallyRows(s.Rows))
		for _, c := range p.Credentials {
			if c.State == api.StatePaused {
				v.ResumeIDs = append(v.ResumeIDs, c.ID)
			} else {
				v.PauseIDs = append(v.PauseIDs, c.ID)
			}
		}
	}
	for _, name := range []string{"anthropic", "openai", "google"} {
		if !slices.Contains(v.Providers, name) {
			v.Providers = append(v.Providers, name)
		}
	}

	v.Tray = m.tray(attention, cooling, n.Total)
	v.Summary, v.Banner = m.summary(v.Address, n)

	k := min(m.recentN, MaxRecent)
	v.Events = make([]string, 0, k)
	for i := 1; i <= k; i++ {
		v.Events = append(v.Events, m.recent[(m.recentN-i)%MaxRecent])
	}
	return v
}

// tray is the tray icon's state: the link first, then whether anything
// needs the person or cools down.
func (m *Model) tray(attention, cooling bool, total int) TrayState {
	switch m.conn {
	case Connecting, Offline:
		return TrayOffline
	case Unauthorized:
		return TrayAttention
	}
	switch {
	case attention || total == 0:
		return TrayAttention
	case cooling:
		return TrayCooling
	}
	return TrayReady
}

// summary is the one-line summary and the banner for the link's state;
// online, the summary counts the credentials by badge.
func (m *Model) summary(address string, n Tally) (summary, banner string) {
	switch m.conn {
	case Connecting:
		return "connecting", fmt.Sprintf("Connecting to the proxy at %s…", address)
	case Offline:
		if m.everOnline {
			return "offline", fmt.Sprintf("The proxy at %s stopped answering at %s. subpool keeps trying to reconnect; what you see is from then.",
				address, m.stamp(m.droppedAt))
		}
		return "offline", fmt.Sprintf("The proxy at %s is not answering. subpool keeps trying to connect.", address)
	case Unauthorized:
		return "admin token refused", fmt.Sprintf("The proxy at %s refused subpool's admin token, so nothing here can be changed. "+
			"It probably runs with another home: start the tray with the proxy's --home.", address)
	}
	if h := m.status.History; h != nil && h.Problem != "" {
		// Online, the banner says what a person must fix that is no
		// credential's.
		banner = "Request history is not being saved: " + h.Problem + "."
		if h.Failed > 0 {
			banner += fmt.Sprintf(" %d rows were lost.", h.Failed)
		}
	}
	if p := m.status.ConfigProblem; p != "" {
		banner = joinNonEmpty(" ", banner, "config.toml edit refused: "+p+"; subpool runs on the config it had.")
	}
	if n.Total == 0 {
		return "no credentials: add one", banner
	}
	return n.String(), banner
}

// Badge words. Tally counts rows by them, so the title, the sections and
// the badges say one thing.
const (
	badgeReady   = "ready"
	badgeCooling = "cooling"
	badgeLimited = "limited" // usable, but one model cools down
	badgePaused  = "paused"
	badgeLogin   = "log in again"
	badgePayment = "payment"
	badgeParked  = "parked"
	badgeReserve = "reserve" // held back so the person keeps some of the window
)

type flags struct{ attention, cooling, ticking, slow bool }

func (m *Model) section(p *api.ProviderStatus, now time.Time, ro bool) (Section, flags) {
	s := Section{Name: p.Name, Title: ProviderTitle(p.Name), Level: LevelGood}
	var f flags
	pcool := activeProviderCool(p, now)
	if pcool != nil {
		f.cooling, f.ticking = true, true
		s.Notes = append(s.Notes, joinNonEmpty(" · ",
			fmt.Sprintf("every %s credential waits %s", s.Title, Dur(pcool.Until.Sub(now))), pcool.Reason))
	}
	for i := range p.Credentials {
		r, rf := m.row(p, &p.Credentials[i], pcool, now, ro)
		s.Rows = append(s.Rows, r)
		f.attention = f.attention || rf.attention
		f.cooling = f.cooling || rf.cooling
		f.ticking = f.ticking || rf.ticking
		f.slow = f.slow || rf.slow
	}
	for _, kind := range []string{api.WaitCapacity, api.WaitSoleProvider} {
		w := m.waits[waitKey{p.Name, kind}]
		if w == nil {
			continue
		}
		f.cooling, f.ticking = true, true
		s.Notes = append(s.Notes, m.waitNote(s.Title, kind, w, now))
	}
	ex, next := exhausted(p, now)
	switch {
	case len(p.Credentials) == 0:
		s.Summary = "no credentials yet"
		s.Level = LevelNeutral
	case ex:
		f.attention = true
		s.Level = LevelBad
		if next.IsZero() {
			s.Summary = "none ready: every credential needs you"
		} else {
			s.Summary = "none ready · next in " + Dur(next.Sub(now))
		}
		if fb, ok := m.fallbacks[p.Name]; ok && fb.to != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("served by %s while %s cools down", ProviderTitle(fb.to), s.Title))
		}
	default:
		s.Summary = TallyRows(s.Rows).SectionSummary()
		if TallyRows(s.Rows).Ready < len(p.Credentials) {
			s.Level = LevelInfo
		}
	}
	return s, f
}

func (m *Model) waitNote(title, kind string, w *wait, now time.Time) string {
	reqs := plural(int64(w.n), "request")
	so := Dur(now.Sub(w.since)) + " so far"
	if !w.until.IsZero() && w.until.After(now) {
		so += ", " + Dur(w.until.Sub(now)) + " left"
	}
	if kind == api.WaitCapacity {
		return fmt.Sprintf("%s is overloaded: holding %s until it has room (%s)", title, reqs, so)
	}
	return fmt.Sprintf("holding %s until a %s credential cools down (%s)", reqs, title, so)
}

func (m *Model) row(p *api.ProviderStatus, c *api.CredentialStatus, pcool *api.Cooldown, now time.Time, ro bool) (Row, flags) {
	r := Row{
		ID: c.ID, Label: c.Label, Provider: c.Provider, Kind: c.Kind,
		Detail: detail(c), Reason: c.Reason, Counts: counts(c.Counters), Reserve: c.Reserve,
	}
	if r.Label == "" {
		r.Label = c.ID
	}
	if r.Provider == "" {
		r.Provider = p.Name
	}
	r.Meters = m.meters(c.Kind, c.Usage, now)

	h := readHolds(c, pcool, now)
	f := m.badge(&r, p.Name, c, h, now)
	// A paced credential is ready: the pace says when it sends next.
	pace := holdingPace(c, now)
	if pace != nil && r.Badge.Text == badgeReady {
		r.Line = PaceText(*pace, now)
	} else {
		pace = nil
	}
	if r.Menu == "" {
		r.Menu = menuState(&r)
	}
	f.ticking = r.Counting || pace != nil && pace.Next != nil && pace.Next.After(now)
	for _, mt := range r.Meters {
		if mt.ResetsAt != "" {
			// Written to the minute, and to the second in its last one.
			f.slow = true
			f.ticking = f.ticking || mt.resetsIn <= time.Minute
		}
	}
	r.Paused = c.State == api.StatePaused
	tools(&r, c)

	if !ro {
		r.CanPause = c.State != api.StatePaused
		r.CanResume = c.State == api.StatePaused
		r.CanReset = len(activeCools(c, now)) > 0 || c.State == api.StateCooling ||
			h.payWide != nil || h.payModel != nil
		r.CanRemove = true
		r.CanRelogin = h.relogin != nil
		r.CanReserve = c.Kind == api.KindOAuth
		r.CanSetTools = r.OwnTool != ""
	}
	if h.relogin != nil {
		r.ReloginText = "Log in again"
		if c.Kind == api.KindAPIKey {
			r.ReloginText = "Replace key"
		}
	}
	return r, f
}

// holds are what keep a credential from serving, as its row shows them.
type holds struct {
	relogin, payWide, payModel *api.Park
	// park is a credential-wide park of another kind: it serves nothing
	// until the person acts, whatever the kind says.
	park *api.Park
	// cool is the credential's own cooldown or its provider's, whichever
	// ends later.
	cool, modelCool *api.Cooldown
}

func readHolds(c *api.CredentialStatus, pcool *api.Cooldown, now time.Time) holds {
	h := holds{
		relogin:  findPark(c, func(x api.Park) bool { return x.Kind == api.ParkRelogin }),
		payWide:  findPark(c, func(x api.Park) bool { return x.Kind == api.ParkPayment && x.Model == "" }),
		payModel: findPark(c, func(x api.Park) bool { return x.Kind == api.ParkPayment && x.Model != "" }),
		park: findPark(c, func(x api.Park) bool {
			return x.Model == "" && x.Kind != api.ParkRelogin && x.Kind != api.ParkPayment
		}),
		cool:      latestCool(c, scopeCredential, now),
		modelCool: latestCool(c, scopeModel, now),
	}
	if pcool != nil && (h.cool == nil || pcool.Until.After(h.cool.Until)) {
		h.cool = pcool
	}
	return h
}

// badge sets r's badge and line from the first case that applies: one
// badge a row, so the order of the cases is their precedence.
func (m *Model) badge(r *Row, provider string, c *api.CredentialStatus, h holds, now time.Time) flags {
	var f flags
	switch {
	case c.State == api.StatePaused:
		r.Badge = Badge{badgePaused, LevelNeutral}
	case h.relogin != nil:
		r.Badge = Badge{badgeLogin, LevelBad}
		if c.Kind == api.KindAPIKey {
			r.Line = "key refused: replace it"
		}
		f.attention = true
	case h.payWide != nil:
		r.Badge = Badge{badgePayment, LevelBad}
		r.Line = "payment: " + orWord(h.payWide.Reason, "billing problem")
		f.attention = true
	case h.park != nil:
		r.Badge = Badge{badgeParked, LevelBad}
		r.Line = joinNonEmpty(": ", "parked", h.park.Reason)
		f.attention = true
	case h.cool != nil:
		r.Badge = Badge{badgeCooling, LevelInfo}
		m.countdown(r, provider, c.ID, h.cool, now)
		r.Line = joinNonEmpty(" · ", "cooling "+Dur(h.cool.Until.Sub(now)), brief(h.cool.Reason), step(h.cool))
		f.cooling = true
	case c.State == api.StateParked:
		r.Badge = Badge{badgeParked, LevelBad}
		r.Line = joinNonEmpty(": ", "parked", c.Reason)
		f.attention = true
	case c.State == api.StateCooling && !hasScope(c, scopeCredential):
		// The proxy says cooling but sent no end time: say so, without a bar.
		r.Badge = Badge{badgeCooling, LevelInfo}
		r.Line = joinNonEmpty(" · ", "cooling", brief(c.Reason))
		f.cooling = true
	case reserved(c, now):
		r.Badge = Badge{badgeReserve, LevelInfo}
		at := m.clockTime(*c.ReservedUntil, now)
		r.Line = fmt.Sprintf("kept for your own use: %d%% reserve · frees in %s (%s)",
			c.Reserve, Until(c.ReservedUntil.Sub(now)), at)
		if b := binding(r.Meters); b != nil {
			r.Menu = b.Text + " · held by the reserve until " + at
		}
		f.cooling = true
	case h.payModel != nil:
		r.Badge = Badge{badgePayment, LevelWarn}
		r.Line = "payment: " + orWord(h.payModel.Reason, "plan lacks "+h.payModel.Model)
		f.attention = true
	case h.modelCool != nil:
		r.Badge = Badge{badgeLimited, LevelWarn}
		m.countdown(r, provider, c.ID, h.modelCool, now)
		r.Line = joinNonEmpty(" · ", h.modelCool.Model+" cooling "+Dur(h.modelCool.Until.Sub(now)), brief(h.modelCool.Reason), step(h.modelCool))
		f.cooling = true
	default:
		r.Badge = Badge{badgeReady, LevelGood}
	}
	return f
}

// ToolsToggle is the words of the switch that opens a login to every tool.
const ToolsToggle = "Let other tools use this login"

// ToolsWarningAnthropic is said before a Claude login is opened to other
// tools.
const ToolsWarningAnthropic = "Anthropic bills other tools' use of a Claude subscription as extra usage, " +
	"paid on top of the plan (\"Third-party apps now draw from your extra usage\"). " +
	"By default this login serves Claude Code only, and other tools' requests go to your API keys or another provider."

// tools fills what the row says about the tools c serves. A credential
// added by an event has no OwnTool yet: its provider and kind say it.
func tools(r *Row, c *api.CredentialStatus) {
	own := c.OwnTool
	if own == "" {
		own = api.SubscriptionTool(r.Provider, c.Kind)
	}
	r.OwnTool, r.OtherTools = own, own != "" && c.OtherTools
	switch {
	case own == "":
		r.Serves = "all tools"
	case r.OtherTools:
		r.Serves = "all tools (opted in)"
	default:
		r.Serves = api.ToolTitle(own) + " only"
	}
	if own != "" && r.Provider == "anthropic" {
		r.ToolsWarning = ToolsWarningAnthropic
	}
}

// countdown fills the bar fields for cd.
func (m *Model) countdown(r *Row, provider, cred string, cd *api.Cooldown, now time.Time) {
	k := keyOf(provider, cred, *cd)
	if cd.Scope == scopeProvider {
		k = coolKey{provider: provider, scope: scopeProvider}
	}
	left := cd.Until.Sub(now)
	start := now
	if s, ok := m.spans[k]; ok && s.until.Equal(cd.Until) {
		start = s.start
	}
	r.Counting = true
	if total := cd.Until.Sub(start); total > 0 {
		r.Countdown = min(1, float64(left)/float64(total))
	} else {
		r.Countdown = 1
	}
}

func step(cd *api.Cooldown) string {
	if cd.Step > 0 && cd.Steps > 0 {
		return fmt.Sprintf("step %d/%d", cd.Step, cd.Steps)
	}
	return ""
}

func orWord(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func detail(c *api.CredentialStatus) string {
	kind := ""
	switch c.Kind {
	case api.KindOAuth:
		kind = "subscription"
	case api.KindAPIKey:
		kind = "API key"
	}
	source := ""
	switch c.Source {
	case "":
	case "claude-code":
		source = "imported from Claude Code"
	case "codex":
		source = "imported from Codex CLI"
	case "gemini-cli":
		source = "imported from Gemini CLI"
	default:
		source = "imported from " + c.Source
	}
	inflight, reserve := "", ""
	if c.InFlight > 0 {
		inflight = fmt.Sprintf("%d in flight", c.InFlight)
	}
	if c.Reserve > 0 {
		reserve = fmt.Sprintf("%d%% reserve", c.Reserve)
	}
	return joinNonEmpty(" · ", kind, source, reserve, inflight)
}

func counts(k api.Counters) string {
	if k.Requests == 0 && k.Errors == 0 {
		return "no requests yet"
	}
	errs, rl := "", ""
	if k.Errors > 0 {
		errs = plural(k.Errors, "error")
	}
	if k.RateLimits > 0 {
		rl = plural(k.RateLimits, "rate limit")
	}
	return joinNonEmpty(" · ", plural(k.Requests, "request"), errs, rl)
}

func findPark(c *api.CredentialStatus, ok func(api.Park) bool) *api.Park {
	if i := slices.IndexFunc(c.Parks, ok); i >= 0 {
		return &c.Parks[i]
	}
	return nil
}

func hasScope(c *api.CredentialStatus, scope string) bool {
	return slices.ContainsFunc(c.Cooldowns, func(cd api.Cooldown) bool { return scopeOf(cd) == scope })
}

func scopeOf(cd api.Cooldown) string {
	if cd.Scope == "" {
		return scopeCredential
	}
	return cd.Scope
}

// activeCools is every cooldown of c still running at now: the wire state
// may lag a cooldown that ran out with no event yet.
func activeCools(c *api.CredentialStatus, now time.Time) []api.Cooldown {
	var out []api.Cooldown
	for _, cd := range c.Cooldowns {
		if cd.Until.After(now) {
			out = append(out, cd)
		}
	}
	return out
}

// latestCool is the running cooldown of scope that ends last.
func latestCool(c *api.CredentialStatus, scope string, now time.Time) *api.Cooldown {
	var best *api.Cooldown
	for i := range c.Cooldowns {
		cd := &c.Cooldowns[i]
		if scopeOf(*cd) == scope && cd.Until.After(now) && (best == nil || cd.Until.After(best.Until)) {
			best = cd
		}
	}
	return best
}

func activeProviderCool(p *api.ProviderStatus, now time.Time) *api.Cooldown {
	if p.Cooldown != nil && p.Cooldown.Until.After(now) {
		return p.Cooldown
	}
	return nil
}

// usable: could the proxy pick c for an ordinary request at now?
func usable(c *api.CredentialStatus, pcool *api.Cooldown, now time.Time) bool {
	switch {
	case c.State == api.StatePaused || c.State == api.StateParked:
		return false
	case findPark(c, func(x api.Park) bool { return x.Model == "" }) != nil:
		return false
	case pcool != nil:
		return false
	case latestCool(c, scopeCredential, now) != nil:
		return false
	case c.State == api.StateCooling && !hasScope(c, scopeCredential):
		return false
	case reserved(c, now):
		return false
	}
	return true
}

// reserved: the proxy holds c back at now to keep its reserve.
func reserved(c *api.CredentialStatus, now time.Time) bool {
	return c.ReservedUntil != nil && c.ReservedUntil.After(now)
}

// exhausted: no credential of p can serve at now, and not because the user
// paused them all. next is when the first one is ready again, zero when none
// will be without the user (every one needs a login or billing).
func exhausted(p *api.ProviderStatus, now time.Time) (ex bool, next time.Time) {
	pcool := activeProviderCool(p, now)
	unpaused := 0
	for i := range p.Credentials {
		c := &p.Credentials[i]
		if usable(c, pcool, now) {
			return false, time.Time{}
		}
		if c.State == api.StatePaused {
			continue
		}
		unpaused++
		if c.State == api.StateParked || findPark(c, func(x api.Park) bool { return x.Model == "" }) != nil {
			continue
		}
		var at time.Time
		if cd := latestCool(c, scopeCredential, now); cd != nil {
			at = cd.Until
		}
		if pcool != nil && pcool.Until.After(at) {
			at = pcool.Until
		}
		if reserved(c, now) && c.ReservedUntil.After(at) {
			at = *c.ReservedUntil
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return unpaused > 0, next
}

// brief is the part of a reason before the upstream's own message: the
// row's one line has room for "429 rate_limit_error: account rate limit";
// the whole reason stays in the row's detail below it.
func brief(reason string) string {
	if i := strings.Index(reason, " — "); i > 0 {
		return reason[:i]
	}
	return reason
}
