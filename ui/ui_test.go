package ui

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/ui/view"
)

var t0 = time.Date(2025, 6, 1, 12, 4, 31, 0, time.UTC)

// goid is the current goroutine's id, read from its stack header
// ("goroutine 7 [running]:"). Tests use it to prove a backend call did not
// run on the goroutine that tapped.
func goid() uint64 {
	var buf [64]byte
	f := strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

type call struct {
	method string
	args   string
	goid   uint64
}

// fakeBackend records every call on a channel the test reads.
type fakeBackend struct {
	admin.Backend // the calls the tray never makes
	calls         chan call
	// toolsErr is what SetOtherTools answers; completeErr CompleteLogin.
	toolsErr, completeErr error
	// status and statusErr are what Status answers.
	mu        sync.Mutex
	status    api.Status
	statusErr error
}

func (f *fakeBackend) record(method string, args ...string) {
	f.calls <- call{method, strings.Join(args, " "), goid()}
}

func (f *fakeBackend) Pause(_ context.Context, id string) error  { f.record("Pause", id); return nil }
func (f *fakeBackend) Resume(_ context.Context, id string) error { f.record("Resume", id); return nil }
func (f *fakeBackend) Reset(_ context.Context, id string) error  { f.record("Reset", id); return nil }
func (f *fakeBackend) RemoveCredential(_ context.Context, id string) error {
	f.record("Remove", id)
	return nil
}
func (f *fakeBackend) AddCredential(_ context.Context, req api.AddCredential) (string, error) {
	f.record("AddKey", req.Provider, req.Label, req.Secret["key"])
	return "", nil
}
func (f *fakeBackend) StartLogin(_ context.Context, provider, label string) (api.LoginStart, error) {
	f.record("StartLogin", provider, label)
	return api.LoginStart{Provider: provider, URL: "https://login.example/authorize"}, nil
}
func (f *fakeBackend) CompleteLogin(_ context.Context, provider, pasted string) error {
	f.record("CompleteLogin", provider, pasted)
	return f.completeErr
}
func (f *fakeBackend) Import(_ context.Context, source string) error {
	f.record("Import", source)
	return nil
}
func (f *fakeBackend) Reserve(_ context.Context, id string, percent int) error {
	f.record("Reserve", id, strconv.Itoa(percent))
	return nil
}
func (f *fakeBackend) Status(context.Context) (api.Status, error) {
	f.record("Status")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.statusErr
}
func (f *fakeBackend) SetOtherTools(_ context.Context, id string, on bool) error {
	f.record("SetOtherTools", id, strconv.FormatBool(on))
	return f.toolsErr
}

// fakeTray keeps what the UI set last.
type fakeTray struct {
	menu   *fyne.Menu
	icon   fyne.Resource
	window fyne.Window
	menus  int // how many times a menu was set
}

func (f *fakeTray) SetSystemTrayMenu(m *fyne.Menu)    { f.menu = m; f.menus++ }
func (f *fakeTray) SetSystemTrayIcon(r fyne.Resource) { f.icon = r }
func (f *fakeTray) SetSystemTrayWindow(w fyne.Window) { f.window = w }

type harness struct {
	t       *testing.T
	app     fyne.App
	u       *UI
	clk     *clock.Fake
	events  chan api.Event
	queue   chan func() // what the UI handed to fyne.Do, run by the test
	backend *fakeBackend
	tray    *fakeTray
	notes   chan *fyne.Notification
}

func newHarness(t *testing.T, edit func(*Options)) *harness {
	h := &harness{
		t:       t,
		app:     test.NewTempApp(t),
		clk:     clock.NewFake(t0),
		events:  make(chan api.Event),
		queue:   make(chan func(), 64),
		backend: &fakeBackend{calls: make(chan call, 64)},
		tray:    &fakeTray{},
		notes:   make(chan *fyne.Notification, 64),
	}
	o := Options{
		Backend: h.backend,
		Import:  h.backend.Import,
		Events:  h.events,
		Clock:   h.clk,
		Address: "127.0.0.1:8787",
		Tray:    h.tray,
		Notify:  func(n *fyne.Notification) { h.notes <- n },
		Logf:    t.Logf,
	}
	if edit != nil {
		edit(&o)
	}
	h.u = New(h.app, o)
	t.Cleanup(h.u.win.Close)
	h.u.model.Loc = time.UTC
	// Everything meant for the UI goroutine runs on the test goroutine, when
	// the test says: widgets then have one owner, and -race stays quiet.
	h.u.do = func(f func()) { h.queue <- f }
	return h
}

// hangGuard turns a wait that would never end into a failure. It is not a
// timing assertion: nothing here is expected to take more than microseconds.
const hangGuard = 10 * time.Second

// runUI runs the next function handed to the UI goroutine.
func (h *harness) runUI() {
	h.t.Helper()
	select {
	case f := <-h.queue:
		f()
	case <-time.After(hangGuard):
		h.t.Fatal("nothing was handed to the UI goroutine")
	}
}

// send applies ev directly, as the reader would, and redraws.
func (h *harness) send(evs ...api.Event) {
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = h.clk.Now()
		}
		h.u.handle(ev)
	}
	h.u.redraw()
}

func (h *harness) row(provider, id string) *rowUI {
	h.t.Helper()
	s := h.u.panel.secs[provider]
	if s == nil || s.byID[id] == nil {
		h.t.Fatalf("no row %s/%s on the panel", provider, id)
	}
	return s.byID[id]
}

// openRowMenu taps a row's "more" button and returns the menu it opens.
func (h *harness) openRowMenu(r *rowUI) fyne.CanvasObject {
	h.t.Helper()
	test.Tap(r.more)
	return h.u.win.Canvas().Overlays().Top()
}

// menuHas says whether a pop-up menu shows an item labelled label.
func menuHas(o fyne.CanvasObject, label string) bool {
	for _, t := range findAll[*canvas.Text](o) {
		if t.Text == label {
			return true
		}
	}
	return false
}

func (h *harness) closeOverlay() {
	if o := h.u.win.Canvas().Overlays().Top(); o != nil {
		h.u.win.Canvas().Overlays().Remove(o)
	}
}

func (h *harness) nextCall() call {
	h.t.Helper()
	var c call
	select {
	case c = <-h.backend.calls:
	case <-time.After(hangGuard):
		h.t.Fatal("the backend was never called")
	}
	if c.goid == goid() {
		h.t.Errorf("%s ran on the UI goroutine", c.method)
	}
	return c
}

func until(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// snapshot: claude-max and claude-pro on Claude, codex-plus on ChatGPT, all
// ready, with usage on two of them.
func snapshot() *api.Status {
	return &api.Status{
		Listen: "127.0.0.1:8787",
		Now:    t0,
		Providers: []api.ProviderStatus{
			{Name: "anthropic", Credentials: []api.CredentialStatus{
				{ID: "c1", Provider: "anthropic", Label: "claude-max", Kind: api.KindOAuth, State: api.StateReady,
					Usage: &api.Utilization{
						FiveHour: &api.Window{Used: 0.42, ResetsAt: until(2 * time.Hour)},
						SevenDay: &api.Window{Used: 0.93},
					},
					Counters: api.Counters{Requests: 128, Errors: 3, RateLimits: 2}},
				{ID: "c2", Provider: "anthropic", Label: "claude-pro", Kind: api.KindOAuth, Source: "claude-code", State: api.StateReady,
					Usage:    &api.Utilization{FiveHour: &api.Window{Used: 0.75}},
					Counters: api.Counters{Requests: 40}},
			}},
			{Name: "openai", Credentials: []api.CredentialStatus{
				{ID: "o1", Provider: "openai", Label: "codex-plus", Kind: api.KindOAuth, State: api.StateReady},
			}},
		},
	}
}

func coolC1() api.Event {
	return api.Event{Type: api.EventCooldownStarted, Provider: "anthropic", CredentialID: "c1",
		Until: until(72 * time.Second), Step: 2, Steps: 3, Scope: "credential", Reason: "429 rate limit"}
}

func reloginC2() api.Event {
	return api.Event{Type: api.EventReloginRequired, Provider: "anthropic", CredentialID: "c2", Reason: "refresh token revoked"}
}

func TestPanelRendersAllReady(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	// The badge says ready and the bars say how much: the line under the
	// badge, which repeated both, is gone.
	if r := h.row("anthropic", "c1"); r.line.Visible() || r.badge.text != "ready" {
		t.Errorf("line visible %v %q, badge %q", r.line.Visible(), r.line.Text, r.badge.text)
	}
	test.AssertRendersToMarkup(t, "panel_ready.xml", h.u.win.Canvas())
}

func TestPanelRendersOneCooling(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}, coolC1())
	h.clk.Advance(36 * time.Second)
	h.u.redraw()
	r := h.row("anthropic", "c1")
	if !r.countdown.Visible() || r.countdown.value != 0.5 || r.line.Text != "cooling 36s · 429 rate limit · step 2/3" {
		t.Errorf("countdown visible %v value %v line %q", r.countdown.Visible(), r.countdown.value, r.line.Text)
	}
	test.AssertRendersToMarkup(t, "panel_cooling.xml", h.u.win.Canvas())
}

func TestPanelRendersRelogin(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}, reloginC2())
	r := h.row("anthropic", "c2")
	if !r.relogin.Visible() || r.relogin.Disabled() || r.badge.text != "log in again" {
		t.Errorf("relogin visible %v disabled %v badge %q", r.relogin.Visible(), r.relogin.Disabled(), r.badge.text)
	}
	test.AssertRendersToMarkup(t, "panel_relogin.xml", h.u.win.Canvas())
}

func TestOfflineShowsBannerAndDisablesActions(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}, coolC1(), api.Event{Type: view.EventOffline})
	p := h.u.panel
	if !p.banner.Visible() || !strings.Contains(p.bannerText.Text, "stopped answering") {
		t.Errorf("banner visible %v text %q", p.banner.Visible(), p.bannerText.Text)
	}
	r := h.row("anthropic", "c1")
	for name, b := range map[string]*widget.Button{"pause": r.pause, "reset": r.reset, "more": r.more, "add": p.add} {
		if !b.Disabled() {
			t.Errorf("%s enabled while offline", name)
		}
	}
	if h.tray.icon.Name() != "subpool-offline.png" {
		t.Errorf("tray icon %s", h.tray.icon.Name())
	}
	// Back online: the banner goes and actions return.
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	if p.banner.Visible() || r.pause.Disabled() {
		t.Errorf("after reconnect: banner %v pause disabled %v", p.banner.Visible(), r.pause.Disabled())
	}
}

func TestNoCredentialsSaysHowToAddOne(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: &api.Status{Listen: "127.0.0.1:8787"}})
	objs := h.u.panel.sections.Objects
	if len(objs) != 1 || objs[0] != h.u.panel.empty || h.u.panel.add.Disabled() {
		t.Fatalf("empty pool shows %d objects, add disabled %v", len(objs), h.u.panel.add.Disabled())
	}
	if h.tray.icon.Name() != "subpool-attention.png" {
		t.Errorf("tray icon %s", h.tray.icon.Name())
	}
	h.send(api.Event{Type: api.EventCredentialAdded, Provider: "anthropic", CredentialID: "c9", Label: "new-max", Kind: api.KindOAuth})
	if objs = h.u.panel.sections.Objects; len(objs) != 1 || objs[0] == h.u.panel.empty {
		t.Errorf("after adding one: %d objects", len(objs))
	}
	if h.row("anthropic", "c9").label.Text != "new-max" {
		t.Error("the new credential has no row")
	}
}

func TestUnauthorizedBanner(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: view.EventUnauthorized})
	if !strings.Contains(h.u.panel.bannerText.Text, "refused subpool's admin token") {
		t.Errorf("banner %q", h.u.panel.bannerText.Text)
	}
	if h.tray.icon.Name() != "subpool-attention.png" {
		t.Errorf("tray icon %s", h.tray.icon.Name())
	}
}

// A relogin_required event notifies once; the same event again does not.
// Both go through the real reader; an offline event after them is the
// marker that they were processed, since the stream is handled in order.
func TestReloginNotifiesOnce(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.u.Start(ctx)
	h.runUI() // the first draw

	h.events <- api.Event{Type: api.EventSnapshot, Time: t0, Snapshot: snapshot()}
	h.events <- reloginC2()
	h.events <- reloginC2()
	h.events <- api.Event{Type: view.EventOffline}

	if n := <-h.notes; n.Title != "claude-pro needs a new login" {
		t.Fatalf("first notification %q", n.Title)
	}
	if n := <-h.notes; n.Title != "subpool proxy stopped" {
		t.Fatalf("after the repeated relogin_required came %q, want the offline notice", n.Title)
	}
}

// The same through the app's own SendNotification, the default Notify.
func TestReloginNotifiesOnceThroughTheApp(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Notify = nil })
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	want := fyne.NewNotification("claude-pro needs a new login",
		"Claude refused its login (refresh token revoked). Open subpool and choose Log in again; until then it is left out.")
	test.AssertNotificationSent(t, want, func() { h.u.handle(reloginC2()) })
	test.AssertNotificationSent(t, nil, func() { h.u.handle(reloginC2()) })
}

func TestTapsCallTheBackendOffTheUIGoroutine(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()}, coolC1(), reloginC2())
	c1, c2 := h.row("anthropic", "c1"), h.row("anthropic", "c2")
	status := h.u.panel.status

	test.Tap(c1.pause)
	if status.Text != "Pause claude-max…" {
		t.Errorf("status while pausing %q", status.Text)
	}
	if c := h.nextCall(); c.method != "Pause" || c.args != "c1" {
		t.Errorf("pause tapped, backend got %+v", c)
	}
	h.runUI()
	if status.Text != "Pause claude-max: done" {
		t.Errorf("status after pausing %q", status.Text)
	}

	test.Tap(c1.reset)
	if c := h.nextCall(); c.method != "Reset" || c.args != "c1" {
		t.Errorf("reset tapped, backend got %+v", c)
	}
	h.runUI()

	test.Tap(c2.relogin)
	if c := h.nextCall(); c.method != "StartLogin" || c.args != "anthropic claude-pro" {
		t.Errorf("log in again tapped, backend got %+v", c)
	}
	h.runUI()
	if !strings.HasPrefix(status.Text, "Finish the Claude login in your browser") {
		t.Errorf("status after login start %q", status.Text)
	}

	// A paused credential offers Resume.
	h.send(api.Event{Type: api.EventCredentialUpdated, Provider: "openai", CredentialID: "o1", State: api.StatePaused})
	o1 := h.row("openai", "o1")
	if o1.pause.Text != "Resume" {
		t.Fatalf("paused row button %q", o1.pause.Text)
	}
	test.Tap(o1.pause)
	if c := h.nextCall(); c.method != "Resume" || c.args != "o1" {
		t.Errorf("resume tapped, backend got %+v", c)
	}
	h.runUI()
}

func TestRemoveAsksFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	r := h.row("openai", "o1")

	test.Tap(findMenuItem(t, h.openRowMenu(r), "Remove…"))
	test.Tap(findButton(t, h.u.win.Canvas().Overlays().Top(), "No"))
	test.Tap(findMenuItem(t, h.openRowMenu(r), "Remove…"))
	test.Tap(findButton(t, h.u.win.Canvas().Overlays().Top(), "Yes"))
	// Had "No" called the backend, that call would come first.
	if c := h.nextCall(); c.method != "Remove" || c.args != "o1" {
		t.Errorf("backend got %+v", c)
	}
	h.runUI()
}

func TestAddKeyForm(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	h.u.panel.showKeyForm("openai", "")
	form := h.u.win.Canvas().Overlays().Top()
	entries := findAll[*widget.Entry](form)
	if len(entries) != 2 {
		t.Fatalf("%d entries in the form", len(entries))
	}
	label, key := entries[0], entries[1]
	if !key.Password {
		t.Fatal("the key entry shows the key")
	}
	add := findButton(t, form, "Add")
	if !add.Disabled() {
		t.Error("Add enabled with nothing filled in")
	}
	test.Type(label, "work key")
	test.Type(key, "sk-test-123")
	test.Tap(add)
	if key.Text != "" {
		t.Error("the key stayed in the entry")
	}
	if c := h.nextCall(); c.method != "AddKey" || c.args != "openai work key sk-test-123" {
		t.Errorf("backend got %+v", c)
	}
	h.runUI()
	if got := h.u.panel.status.Text; got != "Added work key." {
		t.Errorf("status %q", got)
	}
}

func TestAddMenu(t *testing.T) {
	h := newHarness(t, nil)
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	for _, c := range []struct {
		item string
		want string
	}{
		{"Log in with Claude…", "StartLogin anthropic "},
		{"Log in with ChatGPT…", "StartLogin openai "},
		{"Log in with Google (Gemini CLI)…", "StartLogin google "},
		{"Import from Claude Code", "Import claude-code"},
		{"Import from Codex CLI", "Import codex"},
		{"Import from Gemini CLI", "Import gemini-cli"},
	} {
		test.Tap(h.u.panel.add)
		menu := h.u.win.Canvas().Overlays().Top()
		item := findMenuItem(t, menu, c.item)
		test.Tap(item)
		if got := h.nextCall(); got.method+" "+got.args != c.want {
			t.Errorf("%s: backend got %+v", c.item, got)
		}
		h.runUI()
	}
}

func TestTrayMenuAndIcon(t *testing.T) {
	on := false
	h := newHarness(t, func(o *Options) {
		o.Setup = func(tool string) string { return "export SETUP_FOR=" + tool }
		o.StartAtLogin = func() bool { return on }
		o.SetStartAtLogin = func(v bool) error { on = v; return nil }
	})
	if h.tray.window != h.u.win || h.tray.icon.Name() != "subpool-offline.png" {
		t.Fatalf("before any event: window %v icon %s", h.tray.window, h.tray.icon.Name())
	}
	h.send(api.Event{Type: api.EventSnapshot, Snapshot: snapshot()})
	if h.tray.icon.Name() != "subpool-ready.png" {
		t.Errorf("icon %s", h.tray.icon.Name())
	}
	h.send(coolC1())
	if h.tray.icon.Name() != "subpool-cooling.png" {
		t.Errorf("icon %s", h.tray.icon.Name())
	}
	if got := menuLabels(h.tray.menu); !strings.Contains(got, "claude-max — cooling 1m12s · 429 rate limit · step 2/3") {
		t.Errorf("menu:\n%s", got)
	}
	// The same view again leaves the tray menu alone.
	n := h.tray.menus
	h.u.redraw()
	if h.tray.menus != n {
		t.Error("an unchanged menu was set again")
	}
	h.send(reloginC2())
	if h.tray.icon.Name() != "subpool-attention.png" {
		t.Errorf("icon %s", h.tray.icon.Name())
	}
	// claude-max cools and claude-pro is out: Claude has nothing left.
	for _, want := range []string{"claude-pro needs a new login", "No Claude credential is ready"} {
		if n := <-h.notes; n.Title != want {
			t.Errorf("notice %q, want %q", n.Title, want)
		}
	}

	// Copy setup.
	menuItem(t, h.tray.menu, "Copy setup for", "Codex CLI").Action()
	h.runUI()
	if got := h.app.Clipboard().Content(); got != "export SETUP_FOR=codex" {
		t.Errorf("clipboard %q", got)
	}
	if n := <-h.notes; n.Title != "Setup for Codex CLI copied" {
		t.Errorf("notice %q", n.Title)
	}

	// Pause all goes through every credential not paused.
	menuItem(t, h.tray.menu, "Pause all").Action()
	var got []string
	for range 3 {
		got = append(got, h.nextCall().args)
	}
	if strings.Join(got, ",") != "c1,c2,o1" {
		t.Errorf("pause all paused %q", got)
	}
	h.runUI()

	// Start at login: hidden until known, then a checkbox that toggles.
	if menuItemOrNil(h.tray.menu, "Start at login") != nil {
		t.Error("start at login shown before it is known")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.u.Start(ctx)
	h.runUI()
	h.runUI() // the first draw and the start-at-login answer, in either order
	item := menuItem(t, h.tray.menu, "Start at login")
	if item.Checked {
		t.Fatal("checked while off")
	}
	item.Action()
	h.runUI()
	if item = menuItem(t, h.tray.menu, "Start at login"); !item.Checked || !on {
		t.Errorf("after toggling: checked %v setting %v", item.Checked, on)
	}
	if !menuItem(t, h.tray.menu, "Quit").IsQuit {
		t.Error("Quit is not marked IsQuit: Fyne would add a second one")
	}
}

// The render loop draws a burst of events once, and ticks every second
// while something counts down, all on the fake clock.
func TestRenderLoopCoalescesAndTicks(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.u.goSafe("render", func() { h.u.renderLoop(ctx) })
	h.runUI()
	if !strings.HasPrefix(h.u.panel.bannerText.Text, "Connecting") {
		t.Fatalf("first draw: banner %q", h.u.panel.bannerText.Text)
	}

	// Three events while the loop holds off: one draw shows them all.
	h.u.handle(api.Event{Type: api.EventSnapshot, Time: t0, Snapshot: snapshot()})
	h.u.handle(coolC1())
	h.u.handle(reloginC2())
	waitArmed(t, h.clk)
	h.clk.Advance(redrawGap)
	h.runUI()
	if got := h.row("anthropic", "c1").line.Text; got != "cooling 1m12s · 429 rate limit · step 2/3" {
		t.Fatalf("after the burst: %q", got)
	}
	if h.row("anthropic", "c2").badge.text != "log in again" {
		t.Fatal("the burst's last event is missing")
	}
	waitArmed(t, h.clk) // holding off again...
	if len(h.queue) != 0 {
		t.Fatal("drew more than once for one burst")
	}

	// ...then a tick a second after the last draw.
	h.clk.Advance(redrawGap)
	waitArmed(t, h.clk)
	h.clk.Advance(time.Second - redrawGap)
	h.runUI()
	if got := h.row("anthropic", "c1").line.Text; got != "cooling 1m11s · 429 rate limit · step 2/3" {
		t.Errorf("after a tick: %q", got)
	}
}

// waitArmed returns once the render loop waits on a fake timer.
func waitArmed(t *testing.T, clk *clock.Fake) {
	t.Helper()
	if err := clk.BlockUntil(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
}

func findAll[T any](o fyne.CanvasObject) []T {
	var out []T
	var walk func(fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		if x, ok := o.(T); ok {
			out = append(out, x)
		}
		switch c := o.(type) {
		case *fyne.Container:
			for _, k := range c.Objects {
				walk(k)
			}
		case fyne.Widget:
			for _, k := range test.WidgetRenderer(c).Objects() {
				walk(k)
			}
		}
	}
	walk(o)
	return out
}

func findButton(t *testing.T, o fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	for _, b := range findAll[*widget.Button](o) {
		if b.Text == text {
			return b
		}
	}
	t.Fatalf("no button %q", text)
	return nil
}

// findMenuItem finds the innermost tappable showing label: the pop-up
// around the items is tappable too (a tap outside dismisses it).
func findMenuItem(t *testing.T, o fyne.CanvasObject, label string) fyne.Tappable {
	t.Helper()
	var found fyne.Tappable
	for _, it := range findAll[fyne.Tappable](o) {
		for _, txt := range findAll[*canvas.Text](it.(fyne.CanvasObject)) {
			if txt.Text == label {
				found = it
			}
		}
	}
	if found == nil {
		t.Fatalf("no menu item %q", label)
	}
	return found
}

func menuLabels(m *fyne.Menu) string {
	var lines []string
	for _, it := range m.Items {
		lines = append(lines, it.Label)
	}
	return strings.Join(lines, "\n")
}

func menuItemOrNil(m *fyne.Menu, path ...string) *fyne.MenuItem {
	for _, it := range m.Items {
		if it.Label != path[0] {
			continue
		}
		if len(path) == 1 {
			return it
		}
		if it.ChildMenu != nil {
			return menuItemOrNil(it.ChildMenu, path[1:]...)
		}
	}
	return nil
}

func menuItem(t *testing.T, m *fyne.Menu, path ...string) *fyne.MenuItem {
	t.Helper()
	it := menuItemOrNil(m, path...)
	if it == nil {
		t.Fatalf("no menu item %q in:\n%s", path, menuLabels(m))
	}
	return it
}
