package ui

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/ui/view"
)

const (
	// usageSettle is how long the Usage tab waits after a finished request
	// before reading the history again: longer than the history writer's
	// 250 ms batches, so the read sees the request, and a burst of
	// requests costs one read.
	usageSettle = 2 * time.Second
	// usageEvery reads the history this often while the tab shows, idle
	// or not, so the hour rolls over and other writers' rows appear.
	usageEvery = time.Minute
)

// usageUI is the Usage tab: the history's chart and totals, with finished
// requests folded in as they come and the totals read again through the
// admin API shortly after.
//
// Like the panel: the reader goroutine folds events into the model under
// mu and marks dirty; a loop of its own reads the history off the UI
// goroutine and hands a view.UsageView to draw.
type usageUI struct {
	u   *UI
	src view.UsageSource

	mu    sync.Mutex
	model view.Usage // guarded by mu

	dirty  chan struct{} // one slot, as UI.dirty
	opened chan struct{} // one slot: the tab was selected
	// shown is set while the Usage tab is selected: the history is read
	// only for someone looking.
	shown atomic.Bool

	// UI goroutine only.
	span view.Span
	w    *usageWidgets
	tabs *container.AppTabs
}

// newUsageUI is nil when no usage source is set: the panel then has no
// tabs at all.
func newUsageUI(u *UI, src view.UsageSource) *usageUI {
	if src == nil {
		return nil
	}
	uu := &usageUI{u: u, src: src, dirty: make(chan struct{}, 1), opened: make(chan struct{}, 1)}
	uu.w = newUsageWidgets(uu)
	return uu
}

// withTabs puts the credentials and the Usage view side by side; without a
// usage source the credentials stay alone, as before.
func (uu *usageUI) withTabs(credentials fyne.CanvasObject) fyne.CanvasObject {
	if uu == nil {
		return credentials
	}
	usage := container.NewTabItemWithIcon("Usage", theme.HistoryIcon(), uu.w.content)
	uu.tabs = container.NewAppTabs(container.NewTabItemWithIcon("Credentials", theme.AccountIcon(), credentials), usage)
	uu.tabs.OnSelected = func(t *container.TabItem) {
		uu.shown.Store(t == usage)
		if t == usage {
			uu.draw() // what is known, until the read
			select {
			case uu.opened <- struct{}{}:
			default:
			}
		}
	}
	if uu.u.opts.Tab == "usage" {
		uu.tabs.SelectIndex(1)
	}
	return uu.tabs
}

// apply folds ev into the usage model. Safe from any goroutine.
func (uu *usageUI) apply(ev api.Event) {
	if uu == nil {
		return
	}
	uu.mu.Lock()
	changed := uu.model.Apply(ev)
	uu.mu.Unlock()
	if changed {
		uu.markDirty()
	}
}

func (uu *usageUI) markDirty() {
	select {
	case uu.dirty <- struct{}{}:
	default:
	}
}

// loop reads the history when the tab opens and every usageEvery while
// it shows; a finished request is drawn at once (folded in by apply) and
// read back from the history once things settle.
func (uu *usageUI) loop(ctx context.Context) {
	clk := uu.u.clock
	for {
		settle := false
		t := clk.NewTimer(usageEvery)
		select {
		case <-ctx.Done():
		case <-uu.opened:
		case <-t.C():
		case <-uu.dirty:
			settle = true
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
		if !uu.shown.Load() {
			continue
		}
		if settle {
			uu.u.do(uu.draw)
			if clock.Sleep(ctx, clk, usageSettle) != nil {
				return
			}
		}
		uu.read(ctx)
		uu.u.do(uu.draw)
	}
}

// read reads the history through the admin API, off the UI goroutine.
func (uu *usageUI) read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	uu.mu.Lock()
	loc := uu.model.Loc
	uu.mu.Unlock()
	if loc == nil {
		loc = time.Local
	}
	d, err := view.FetchUsage(ctx, uu.src, uu.u.clock.Now(), loc)
	uu.mu.Lock()
	defer uu.mu.Unlock()
	if err != nil {
		uu.model.Failed(err)
		return
	}
	uu.model.Loaded(d)
}

// draw shows the model now. UI goroutine only.
func (uu *usageUI) draw() {
	uu.mu.Lock()
	v := uu.model.View(uu.u.clock.Now(), uu.span)
	uu.mu.Unlock()
	uu.w.update(v)
}

// setSpan switches the chart between hours and days. UI goroutine only.
func (uu *usageUI) setSpan(s view.Span) {
	if uu.span != s {
		uu.span = s
		uu.draw()
	}
}
