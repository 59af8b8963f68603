// Package ui is subpool's tray and panel. Like Tailscale's systray, it is
// only a client: it reads the admin event stream, keeps the last state (in
// ui/view), and turns clicks into admin API calls. It never touches secrets
// or the pool.
//
// Threading: Fyne widgets belong to the UI goroutine. Two goroutines of ours
// feed it: the reader folds events into the model and marks it dirty through
// a one-slot channel; the render loop turns the model into a view.View (a
// plain value) at most every redrawGap, plus once a second while something
// counts down, and hands it over with fyne.Do. Backend calls are network
// calls: taps start a goroutine for them and show the outcome with fyne.Do.
package ui

import (
	"context"
	"fmt"
	"log"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"fyne.io/fyne/v2"

	"github.com/subpool/subpool/assets"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/ui/view"
)

// Tray is the part of desktop.App the tray needs. It is ours, not
// desktop.App, because Fyne's test app does not implement desktop.App.
type Tray interface {
	SetSystemTrayMenu(*fyne.Menu)
	SetSystemTrayIcon(fyne.Resource)
	SetSystemTrayWindow(fyne.Window)
}

// Options configure the tray and the panel.
type Options struct {
	// Backend performs the actions: the admin client of the proxy shown.
	// Each method is a network round trip; the UI calls them only off its
	// own goroutine. Required.
	Backend admin.Backend
	// Import takes over the login a CLI holds: "claude-code", "codex" or
	// "gemini-cli".
	// Called off the UI goroutine. Required when the panel offers import.
	Import func(ctx context.Context, source string) error
	// Events is the admin event stream: a snapshot first (and after every
	// reconnect), then events; "offline" and "unauthorized" from the client
	// itself. Required. A closed channel means the proxy is gone for good.
	Events <-chan api.Event
	// Clock drives countdowns. Nil means the wall clock.
	Clock clock.Clock
	// Address is the proxy address the menu shows. Empty means the one the
	// snapshot reports.
	Address string
	// Setup returns what to paste so a tool ("claude-code", "codex",
	// "gemini-cli", "opencode") uses the proxy, as `subpool env TOOL` prints it. Called
	// off the UI goroutine. Nil hides "Copy setup".
	Setup func(tool string) string
	// SetUpTool writes a tool's own settings file so it uses the proxy
	// (`subpool setup TOOL`); with dry it returns the change and writes
	// nothing. Called off the UI goroutine. Nil hides "Set up a tool".
	SetUpTool func(tool string, dry bool) (string, error)
	// About is what "About subpool" shows: this build's version, commit
	// and date. Nil hides the item.
	About func() string
	// StartAtLogin reports whether the login service is installed, and
	// SetStartAtLogin changes it. Both are called off the UI goroutine.
	// Either nil hides the menu item.
	StartAtLogin    func() bool
	SetStartAtLogin func(on bool) error
	// Notify shows a desktop notification. Nil means the app's
	// SendNotification. Called off the UI goroutine.
	Notify func(*fyne.Notification)
	// Quit runs when the user picks Quit, on the UI goroutine. Nil means
	// a.Quit(); a Quit of your own (to stop an in-process proxy first) must
	// end with a.Quit() itself.
	Quit func()
	// OpenPanel shows the panel at start, not only from the tray: for the
	// demo, and with NoTrayHost.
	OpenPanel bool
	// Tray overrides the system tray. Nil means the app itself when it is a
	// desktop app with a tray; without one, the panel opens as a window.
	Tray Tray
	// Logf logs problems nobody else will see. Nil means log.Printf.
	Logf func(format string, args ...any)
	// Usage reads the request history (the admin client does) for the
	// Usage tab. Nil shows the credentials alone, without tabs.
	Usage view.UsageSource
	// Tab is the panel's tab at start: "usage" for the Usage tab (the
	// screenshot's), anything else the credentials.
	Tab string
	// Section is the provider ("google") whose card the credentials keep
	// at the top until the person scrolls, for a screenshot of a card
	// below the first; empty starts at the top.
	Section string
	// Size is the panel window's size at start; zero means 560×720.
	Size fyne.Size
	// NoTrayHost says why no tray icon will show (no StatusNotifier host
	// on this desktop) and how to get one. Set, the UI uses no tray: the
	// panel opens as a window that says this once, at its top, and carries
	// the tray's menu as its own.
	NoTrayHost string
	// Closed runs, on the UI goroutine, when the person closes the window
	// of a UI without a tray: the window hides and the app keeps running
	// (and serving, for an in-process proxy). Nil lets the close quit.
	Closed func()
	// Reopen shows the window again, once per value received: another
	// `subpool` asking for it.
	Reopen <-chan struct{}
}

const (
	// redrawGap is the shortest time between two redraws: a burst of
	// events (a request rotating through every credential) draws once.
	redrawGap = 250 * time.Millisecond
	// callTimeout bounds one admin call started from a click.
	callTimeout = 30 * time.Second
)

// UI is the running tray and panel.
type UI struct {
	app   fyne.App
	opts  Options
	clock clock.Clock
	tray  Tray
	win   fyne.Window
	panel *panel
	usage *usageUI // nil without Options.Usage
	icons map[view.TrayState]fyne.Resource

	// do runs a function on the UI goroutine: fyne.Do, except in tests,
	// which queue it to run on the test goroutine.
	do func(func())

	mu    sync.Mutex
	model view.Model // guarded by mu

	// dirty has one slot: any number of events between two redraws leave
	// one mark, so the render loop never falls behind the stream.
	dirty chan struct{}

	// ctx bounds backend calls started by clicks; set before the UI runs.
	ctx context.Context

	// UI goroutine only.
	last         view.View
	shownIcon    view.TrayState
	shownMenu    []view.MenuItem
	startAtLogin *bool // nil until known, or when the option is off
}

// New builds the panel window and wires the tray on a. Call it on the main
// goroutine before a.Run, then Start. Run does all three.
func New(a fyne.App, o Options) *UI {
	u := &UI{
		app:   a,
		opts:  o,
		clock: o.Clock,
		tray:  o.Tray,
		do:    fyne.Do,
		dirty: make(chan struct{}, 1),
		ctx:   context.Background(),
		icons: map[view.TrayState]fyne.Resource{
			view.TrayReady:     fyne.NewStaticResource("subpool-ready.png", assets.Ready),
			view.TrayCooling:   fyne.NewStaticResource("subpool-cooling.png", assets.Cooling),
			view.TrayAttention: fyne.NewStaticResource("subpool-attention.png", assets.Attention),
			view.TrayOffline:   fyne.NewStaticResource("subpool-offline.png", assets.Offline),
		},
	}
	if u.clock == nil {
		u.clock = clock.Real{}
	}
	if u.tray == nil && o.NoTrayHost == "" {
		if t, ok := a.(Tray); ok {
			u.tray = t
		}
	}
	if o.NoTrayHost != "" {
		u.tray = nil
	}
	if u.opts.Logf == nil {
		u.opts.Logf = log.Printf
	}
	if u.opts.Notify == nil {
		u.opts.Notify = a.SendNotification
	}
	u.model.Address = o.Address
	a.Settings().SetTheme(newPanelTheme())
	if a.Icon() == nil {
		a.SetIcon(fyne.NewStaticResource("subpool.png", assets.Icon))
	}

	u.win = a.NewWindow("subpool")
	u.usage = newUsageUI(u, o.Usage)
	u.panel = newPanel(u)
	u.win.SetContent(u.panel.content)
	size := o.Size
	if size.IsZero() {
		size = fyne.NewSize(560, 720)
	}
	u.win.Resize(size)
	u.show(u.model.View(u.clock.Now()))
	switch {
	case u.tray != nil:
		// Left-click opens the panel; closing it only hides it.
		u.tray.SetSystemTrayWindow(u.win)
		u.win.SetCloseIntercept(u.win.Hide)
	case o.Closed != nil:
		u.win.SetCloseIntercept(u.closeWindow)
	}
	return u
}

// closeWindow is a close of the window of a UI without a tray: it hides,
// and the app goes on.
func (u *UI) closeWindow() {
	u.win.Hide()
	u.opts.Closed()
}

// Window is the panel window.
func (u *UI) Window() fyne.Window { return u.win }

// Start runs the event reader and the render loop until ctx ends. Call it on
// the UI goroutine, once.
func (u *UI) Start(ctx context.Context) {
	u.ctx = ctx
	u.goSafe("events", func() { u.read(ctx) })
	u.goSafe("render", func() { u.renderLoop(ctx) })
	if u.usage != nil {
		u.goSafe("usage", func() { u.usage.loop(ctx) })
	}
	if u.opts.Reopen != nil {
		u.goSafe("reopen", func() { u.reopenLoop(ctx) })
	}
	if u.opts.StartAtLogin != nil && u.opts.SetStartAtLogin != nil {
		u.goSafe("start-at-login", func() {
			on := u.opts.StartAtLogin()
			u.do(func() {
				u.startAtLogin = &on
				u.showMenu()
			})
		})
	}
	if u.tray == nil || u.opts.OpenPanel {
		u.win.Show() // without a tray nothing else would open it
	}
}

// Run builds the tray on a, runs it until the user quits, and stops the
// background work. It blocks like a.Run, and must be called on the main
// goroutine.
func Run(a fyne.App, o Options) {
	u := New(a, o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u.Start(ctx)
	a.Run()
}

// read folds the stream into the model. The admin client reconnects by
// itself and says so with events, so this is the whole loop.
func (u *UI) read(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-u.opts.Events:
			if !ok {
				u.handle(api.Event{Type: view.EventOffline})
				return
			}
			u.handle(ev)
		}
	}
}

// handle applies one event, sends what it calls for and marks the view
// dirty. Safe from any goroutine.
func (u *UI) handle(ev api.Event) {
	u.mu.Lock()
	notices := u.model.Apply(ev, u.clock.Now())
	u.mu.Unlock()
	u.usage.apply(ev)
	for _, n := range notices {
		u.opts.Notify(fyne.NewNotification(n.Title, n.Body))
	}
	u.markDirty()
}

func (u *UI) markDirty() {
	select {
	case u.dirty <- struct{}{}:
	default: // a redraw is already due; it will see this change too
	}
}

func (u *UI) currentView() view.View {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.model.View(u.clock.Now())
}

// renderLoop draws, then waits at least redrawGap and until the model is
// dirty or, while something counts down, a second has passed (a minute
// while only a window's reset time is shown).
func (u *UI) renderLoop(ctx context.Context) {
	for {
		v := u.currentView()
		u.do(func() { u.show(v) })
		if clock.Sleep(ctx, u.clock, redrawGap) != nil {
			return
		}
		var tick clock.Timer
		var tickC <-chan time.Time
		switch {
		case v.Ticking:
			tick = u.clock.NewTimer(time.Second - redrawGap)
		case v.Minutely:
			tick = u.clock.NewTimer(time.Minute - redrawGap)
		}
		if tick != nil {
			tickC = tick.C()
		}
		select {
		case <-ctx.Done():
		case <-u.dirty:
		case <-tickC:
		}
		if tick != nil {
			tick.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// redraw draws the model now, on the UI goroutine. The render loop does the
// same from its own goroutine; tests call this to draw synchronously.
func (u *UI) redraw() { u.show(u.currentView()) }

// show puts v on screen. UI goroutine only.
func (u *UI) show(v view.View) {
	u.last = v
	u.panel.update(v)
	if title := "subpool · " + v.Summary; title != u.win.Title() {
		u.win.SetTitle(title)
	}
	if u.tray == nil {
		u.showMenu()
		return
	}
	if v.Tray != u.shownIcon {
		u.tray.SetSystemTrayIcon(u.icons[v.Tray])
		u.shownIcon = v.Tray
	}
	u.showMenu()
}

// showMenu rebuilds the tray menu whole from the last view, the way
// Tailscale's systray does: simpler than patching items, and the menu is
// small. It skips identical menus, because some trays re-layout (and close
// an open menu) on every update. Without a tray host the same menu is the
// window's own.
func (u *UI) showMenu() {
	if u.tray == nil && u.opts.NoTrayHost == "" {
		return
	}
	items := u.last.Menu(view.MenuOptions{Setup: u.opts.Setup != nil, StartAtLogin: u.startAtLogin, About: u.opts.About != nil, Window: u.tray == nil})
	if slices.EqualFunc(items, u.shownMenu, menuItemEqual) && u.shownMenu != nil {
		return
	}
	u.shownMenu = items
	menu := fyne.NewMenu("subpool", u.menuItems(items)...)
	if u.tray == nil {
		u.win.SetMainMenu(fyne.NewMainMenu(menu))
		return
	}
	u.tray.SetSystemTrayMenu(menu)
}

// reopenLoop shows the window whenever another `subpool` asks for it.
func (u *UI) reopenLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-u.opts.Reopen:
			if !ok {
				return
			}
			u.do(func() {
				u.win.Show()
				u.win.RequestFocus()
			})
		}
	}
}

func menuItemEqual(a, b view.MenuItem) bool {
	return a.Label == b.Label && a.Action == b.Action && a.Arg == b.Arg && a.Disabled == b.Disabled &&
		a.Checked == b.Checked && a.Separator == b.Separator && slices.EqualFunc(a.Children, b.Children, menuItemEqual)
}

func (u *UI) menuItems(items []view.MenuItem) []*fyne.MenuItem {
	out := make([]*fyne.MenuItem, 0, len(items))
	for _, it := range items {
		if it.Separator {
			out = append(out, fyne.NewMenuItemSeparator())
			continue
		}
		mi := &fyne.MenuItem{Label: it.Label, Disabled: it.Disabled, Checked: it.Checked, IsQuit: it.Action == view.ActQuit}
		if len(it.Children) > 0 {
			mi.ChildMenu = fyne.NewMenu(it.Label, u.menuItems(it.Children)...)
		} else if it.Action != view.ActNone {
			mi.Action = func() { u.menuAction(it) }
		} else {
			mi.Disabled = true
		}
		out = append(out, mi)
	}
	return out
}

// menuAction runs a picked tray item, on the UI goroutine. It reads the
// credentials from the latest view, not from when the menu was built.
func (u *UI) menuAction(it view.MenuItem) {
	switch it.Action {
	case view.ActOpenPanel:
		u.win.Show()
		u.win.RequestFocus()
	case view.ActCopySetup:
		u.copySetup(it.Arg, it.Label)
	case view.ActPauseAll:
		u.forAll("Pause", u.last.PauseIDs, u.opts.Backend.Pause)
	case view.ActResumeAll:
		u.forAll("Resume", u.last.ResumeIDs, u.opts.Backend.Resume)
	case view.ActStartAtLogin:
		u.toggleStartAtLogin()
	case view.ActAbout:
		u.showAbout()
	case view.ActQuit:
		if u.opts.Quit != nil {
			u.opts.Quit()
		} else {
			u.app.Quit()
		}
	}
}

func (u *UI) copySetup(tool, name string) {
	u.async("setup", func(context.Context) (func(), error) {
		text := u.opts.Setup(tool)
		return func() {
			u.app.Clipboard().SetContent(text)
			msg := "Paste it where " + name + " reads its settings."
			u.panel.setStatus("Copied the setup for "+name+". "+msg, false)
			// The menu closes on click; without a notice nothing says it worked.
			u.goSafe("notify", func() { u.opts.Notify(fyne.NewNotification("Setup for "+name+" copied", msg)) })
		}, nil
	})
}

// forAll runs call for every id, one after the other, and reports once.
func (u *UI) forAll(verb string, ids []string, call func(context.Context, string) error) {
	ids = slices.Clone(ids)
	u.panel.setStatus(fmt.Sprintf("%s all (%d)…", verb, len(ids)), false)
	u.async(verb+" all", func(ctx context.Context) (func(), error) {
		var failed int
		var last error
		for _, id := range ids {
			if err := call(ctx, id); err != nil {
				failed++
				last = err
			}
		}
		if failed > 0 {
			err := fmt.Errorf("%s all: %d of %d failed: %w", verb, failed, len(ids), last)
			u.opts.Notify(fyne.NewNotification("subpool", err.Error()))
			return nil, err
		}
		return func() { u.panel.setStatus(fmt.Sprintf("%s all: done (%d)", verb, len(ids)), false) }, nil
	})
}

func (u *UI) toggleStartAtLogin() {
	if u.startAtLogin == nil {
		return
	}
	on := !*u.startAtLogin
	u.async("start at login", func(context.Context) (func(), error) {
		if err := u.opts.SetStartAtLogin(on); err != nil {
			u.opts.Notify(fyne.NewNotification("Start at login", "Could not change it: "+err.Error()))
			return nil, err
		}
		return func() {
			u.startAtLogin = &on
			u.showMenu()
		}, nil
	})
}

// async runs call off the UI goroutine with a bounded context; the func it
// returns runs on the UI goroutine afterwards, and an error lands in the
// panel's status line.
func (u *UI) async(what string, call func(ctx context.Context) (func(), error)) {
	ctx := u.ctx
	u.goSafe(what, func() {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		done, err := call(ctx)
		u.do(func() {
			if err != nil {
				u.panel.setStatus(err.Error(), true)
				return
			}
			if done != nil {
				done()
			}
		})
	})
}

// goSafe runs fn on its own goroutine and logs a panic instead of taking
// the whole app down with it.
func (u *UI) goSafe(name string, fn func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				u.opts.Logf("ui: %s: panic: %v\n%s", name, r, debug.Stack())
			}
		}()
		fn()
	}()
}
