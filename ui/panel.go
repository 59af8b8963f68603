package ui

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

// panel is the window's content. Its widgets are built once and updated in
// place from each view.View, so a redraw keeps the scroll position, focus
// and an open form. UI goroutine only.
type panel struct {
	u *UI

	banner      *fyne.Container
	bannerText  *widget.Label
	notes       *lineLabel    // every provider's notes, in the notice slot
	trayNote    *widget.Label // why there is no tray icon; Options.NoTrayHost
	trayNoteBox *fyne.Container
	summary     *lineLabel
	add         *widget.Button
	status      *widget.Label
	empty       *widget.Label
	sections    *fyne.Container
	scroll      *container.Scroll // the sections
	scrollTo    string            // Options.Section, until the person scrolls
	scrolled    bool              // scrolledTo is set
	scrolledTo  fyne.Position     // where scrollToSection last put the scroll
	secs        map[string]*sectionUI
	events      []string
	eventList   *widget.List
	content     *fyne.Container
	relayout    bool              // a widget changed shape since the last flush
	notice      *container.Scroll // the notice slot
	noticeDirty bool              // a notice changed since the last flush
	login       *loginUI          // the last login dialog shown
}

func newPanel(u *UI) *panel {
	p := &panel{u: u, secs: map[string]*sectionUI{}, scrollTo: u.opts.Section}

	p.bannerText = widget.NewLabel("")
	p.bannerText.Wrapping = fyne.TextWrapWord
	p.bannerText.Importance = widget.WarningImportance
	p.banner = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), nil, p.bannerText)
	p.banner.Hide()
	// A note a line, each cut to the width: the holds' notes count every
	// second, and a wrapped label draws each of its lines whole.
	p.notes = oneLine(widget.WarningImportance)
	p.notes.Hide()
	p.status = widget.NewLabel("")
	p.status.Wrapping = fyne.TextWrapWord
	p.status.Hide()
	p.trayNote = widget.NewLabel(u.opts.NoTrayHost)
	p.trayNote.Wrapping = fyne.TextWrapWord
	p.trayNoteBox = container.NewBorder(nil, nil, widget.NewIcon(theme.InfoIcon()),
		container.NewVBox(widget.NewButtonWithIcon("", theme.CancelIcon(), p.dismissTrayNote)), p.trayNote)
	p.trayNoteBox.Hidden = u.opts.NoTrayHost == ""

	title := widget.NewLabelWithStyle("subpool", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.summary = oneLine(widget.MediumImportance)
	p.add = widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), p.showAddMenu)
	p.add.Importance = widget.HighImportance
	header := container.NewBorder(nil, nil, title, p.add, p.summary)

	p.empty = widget.NewLabel("No credentials yet. Use Add to log in with Claude, ChatGPT or Google, " +
		"paste an API key, or import the login Claude Code, Codex CLI or Gemini CLI already has.")
	p.empty.Wrapping = fyne.TextWrapWord

	p.sections = container.NewVBox()
	p.eventList = widget.NewList(
		func() int { return len(p.events) },
		func() fyne.CanvasObject { return oneLine(widget.MediumImportance) },
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*lineLabel).SetText(p.events[i]) },
	)
	recent := container.NewBorder(widget.NewLabelWithStyle("Recent", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		nil, nil, nil, p.eventList)

	p.scroll = container.NewVScroll(p.sections)
	split := container.NewVSplit(p.scroll, recent)
	split.Offset = 0.7
	// The tray note never changes once shown, so it moves nothing until
	// the person dismisses it.
	top := container.NewVBox(header, p.trayNoteBox, p.noticeSlot())
	p.content = container.NewBorder(top, nil, nil, nil, u.usage.withTabs(split))
	return p
}

// noticeSlot is where the banner, the providers' notes (a hold, a
// provider-wide cooldown) and the last action's outcome appear: a band of
// fixed height, scrolled when they need more, so they come and go without
// pushing the cards down.
func (p *panel) noticeSlot() fyne.CanvasObject {
	p.notice = container.NewVScroll(container.NewVBox(p.banner, p.notes, p.status))
	probe := widget.NewLabel("1\n2")
	p.notice.SetMinSize(fyne.NewSize(0, probe.MinSize().Height))
	return p.notice
}

// update shows v. Widgets change only where v differs from what is shown.
func (p *panel) update(v view.View) {
	p.setNotice(p.bannerText.Text, p.bannerText.SetText, p.banner, v.Banner)
	notes := ""
	for _, s := range v.Sections {
		for _, n := range s.Notes {
			notes = joinLines(notes, n)
		}
	}
	p.setNotice(p.notes.Text, p.notes.SetText, p.notes, notes)
	setLine(p.summary, v.Summary)
	setEnabled(p.add, !v.ReadOnly)

	var objs []fyne.CanvasObject
	total := 0
	for _, s := range v.Sections {
		total += len(s.Rows)
	}
	if total == 0 && v.Conn == view.Online {
		objs = append(objs, p.empty)
	}
	objs = append(objs, reuse(p.secs, v.Sections,
		func(s view.Section) string { return s.Name },
		func() *sectionUI { return newSection(p) },
		func(su *sectionUI, s view.Section) fyne.CanvasObject { su.update(s); return su.card })...)
	p.setObjects(p.sections, objs)

	if !slices.Equal(p.events, v.Events) {
		p.events = v.Events
		p.eventList.Refresh()
	}
	p.flush()
	p.scrollToSection()
}

// scrollToSection keeps Options.Section's card at the top of the
// credentials, following it as the cards above it grow (a row's meters
// arrive with its first usage), until the person scrolls elsewhere.
func (p *panel) scrollToSection() {
	s := p.secs[p.scrollTo]
	if s == nil {
		return
	}
	// The scroll pulls an offset back when the cards shrink below it; any
	// other move is the person's, and the panel is theirs from then on.
	maxY := max(0, p.sections.MinSize().Height-p.scroll.Size().Height)
	if p.scrolled && p.scroll.Offset.Y != min(p.scrolledTo.Y, maxY) {
		p.scrollTo = ""
		return
	}
	y := s.card.Position().Y
	if y == 0 && p.sections.Objects[0] != s.card {
		return // not laid out yet
	}
	p.scroll.ScrollToOffset(fyne.NewPos(0, y))
	p.scrolled, p.scrolledTo = true, p.scroll.Offset
}

// dismissTrayNote hides the note on the missing tray icon: the person has
// read it, and the log keeps it.
func (p *panel) dismissTrayNote() {
	p.trayNoteBox.Hide()
	p.relayout = true
	p.flush()
}

// setStatus shows the outcome of the last action.
func (p *panel) setStatus(msg string, isErr bool) {
	imp := widget.MediumImportance
	if isErr {
		imp = widget.DangerImportance
	}
	if p.status.Importance != imp {
		p.status.Importance = imp
		p.status.Refresh()
	}
	p.setNotice(p.status.Text, p.status.SetText, p.status, msg)
	p.flush()
}

// sectionUI is one provider's card. Its notes are shown in the panel's
// notice slot, so they do not push the card's rows.
type sectionUI struct {
	p    *panel
	card *widget.Card
	// summary is the header's count ("2 of 3 ready"), a label of its own:
	// a card's subtitle set per second refreshes the whole card.
	summary *lineLabel
	rows    *fyne.Container
	byID    map[string]*rowUI
}

func newSection(p *panel) *sectionUI {
	s := &sectionUI{p: p, byID: map[string]*rowUI{}, summary: oneLine(widget.MediumImportance)}
	s.rows = container.NewVBox()
	s.card = widget.NewCard("", "", container.NewVBox(s.summary, s.rows))
	return s
}

func (s *sectionUI) update(sec view.Section) {
	p := s.p
	if s.card.Title != sec.Title {
		s.card.SetTitle(sec.Title)
	}
	setLine(s.summary, sec.Summary)
	p.setObjects(s.rows, reuse(s.byID, sec.Rows,
		func(r view.Row) string { return r.ID },
		func() *rowUI { return newRow(s.p) },
		func(ru *rowUI, r view.Row) fyne.CanvasObject { ru.update(r); return ru.box }))
}

// reuse returns the object show gives for each item, in order. Each key
// keeps the widgets made for it (by build, the first time) across updates,
// so a refresh does not rebuild them; a key no longer listed loses them.
func reuse[I any, W any](by map[string]W, items []I, key func(I) string, build func() W, show func(W, I) fyne.CanvasObject) []fyne.CanvasObject {
	var objs []fyne.CanvasObject
	seen := map[string]bool{}
	for _, it := range items {
		k := key(it)
		w, ok := by[k]
		if !ok {
			w = build()
			by[k] = w
		}
		seen[k] = true
		objs = append(objs, show(w, it))
	}
	for k := range by {
		if !seen[k] {
			delete(by, k)
		}
	}
	return objs
}

// rowUI is one credential. Its lines sit in a fixed order and each keeps
// its height whatever the state, so a row going from ready to cooling to
// "log in again" moves no button (issue 42: clicks aimed at "Log in
// again" landed on a meter).
type rowUI struct {
	p   *panel
	row view.Row // what is shown; buttons act on it

	badge     *badge
	label     *widget.Label
	detail    *lineLabel // the metadata line: kind, source, reserve, in flight
	line      *lineLabel
	countdown *levelBar       // shares the line's slot while counting down
	meters    *fyne.Container // one name and bar per window, names aligned
	bars      []*meter
	counts    *lineLabel // counters and the last reason
	relogin   *widget.Button
	serves    *lineLabel    // which tools the credential serves
	tools     *widget.Check // "Let other tools use this login"
	pause     *widget.Button
	reset     *widget.Button
	more      *widget.Button  // Reserve… and Remove…, behind a menu
	lineSlot  *fyne.Container // the line or the countdown
	loginSlot *fyne.Container // "Log in again", or its room
	box       *fyne.Container
}

func newRow(p *panel) *rowUI {
	r := &rowUI{p: p, badge: newBadge()}
	r.badge.room = view.BadgeWords
	r.label = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	r.detail = oneLine(widget.LowImportance)
	r.detail.Alignment = fyne.TextAlignTrailing
	r.line = oneLine(widget.MediumImportance)
	r.countdown = newLevelBar(view.LevelInfo)
	r.meters = container.New(layout.NewFormLayout())
	r.counts = oneLine(widget.LowImportance)
	r.counts.SizeName = theme.SizeNameCaptionText

	r.relogin = widget.NewButtonWithIcon("Log in again", theme.LoginIcon(), func() { p.relogin(r.row) })
	r.relogin.Importance = widget.HighImportance
	r.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() { p.pauseOrResume(r.row) })
	r.reset = widget.NewButtonWithIcon("Reset cooldown", theme.MediaReplayIcon(), func() { p.reset(r.row) })
	r.more = widget.NewButtonWithIcon("", theme.MoreVerticalIcon(), func() { p.showRowMenu(r) })
	r.serves = oneLine(widget.MediumImportance)
	r.tools = widget.NewCheck(view.ToolsToggle, func(on bool) { p.setTools(r, on) })

	// The label keeps its width; the metadata beside it gives way.
	head := container.NewBorder(nil, nil, container.NewHBox(container.NewCenter(r.badge), r.label), nil, r.detail)
	r.lineSlot = slot(r.line, r.countdown)
	r.countdown.Hide()
	// Each button's room fits its widest words, so "Resume" or "Replace
	// key" does not push the buttons after it.
	r.loginSlot = buttonSlot(r.relogin, "Log in again", "Replace key")
	r.relogin.Hide()
	buttons := container.NewHBox(buttonSlot(r.pause, "Pause", "Resume"), r.reset, r.loginSlot, layout.NewSpacer(), r.more)
	toolsLine := container.NewBorder(nil, nil, nil, r.tools, r.serves)
	r.box = container.NewVBox(head, r.lineSlot, r.meters, r.counts, toolsLine, buttons, widget.NewSeparator())
	return r
}

func (r *rowUI) update(row view.Row) {
	p := r.p
	r.row = row
	r.badge.set(row.Badge.Text, row.Badge.Level)
	p.setText(r.label, row.Label)
	setLine(r.detail, row.Detail)
	setLine(r.line, row.Line)

	// While counting down, the bar carries the line: one widget, not two
	// saying the same.
	if row.Counting {
		r.countdown.set(row.Countdown, row.Line, view.LevelInfo)
	}
	setShown(r.countdown, row.Counting)
	// An empty line is one the badge and the bars already say.
	setShown(r.line, !row.Counting && row.Line != "")

	r.setMeters(row.Meters)

	counts := row.Counts
	if row.Reason != "" {
		counts += " · last: " + row.Reason
	}
	setLine(r.counts, counts)

	if row.ReloginText != "" && r.relogin.Text != row.ReloginText {
		r.relogin.SetText(row.ReloginText)
	}
	setShown(r.relogin, row.ReloginText != "")
	setEnabled(r.relogin, row.CanRelogin)
	if row.Paused {
		setButton(r.pause, "Resume", theme.MediaPlayIcon())
		setEnabled(r.pause, row.CanResume)
	} else {
		setButton(r.pause, "Pause", theme.MediaPauseIcon())
		setEnabled(r.pause, row.CanPause)
	}
	setEnabled(r.reset, row.CanReset)
	setEnabled(r.more, row.CanRemove || row.CanReserve)

	setLine(r.serves, "Serves "+row.Serves)
	p.setVisible(r.tools, row.OwnTool != "")
	if r.tools.Checked != row.OtherTools {
		// r.row is already row, so setTools sees no change to make.
		r.tools.SetChecked(row.OtherTools)
	}
	if row.CanSetTools && r.tools.Disabled() {
		r.tools.Enable()
	} else if !row.CanSetTools && !r.tools.Disabled() {
		r.tools.Disable()
	}
}

// setMeters shows one bar per window, reusing the bars already built.
func (r *rowUI) setMeters(ms []view.Meter) {
	for len(r.bars) < len(ms) {
		r.bars = append(r.bars, newMeter())
	}
	objs := make([]fyne.CanvasObject, 0, 2*len(ms))
	for i, mt := range ms {
		if r.bars[i].set(mt) {
			r.p.relayout = true
		}
		objs = append(objs, r.bars[i].name, r.bars[i].bar)
	}
	r.bars = r.bars[:len(ms)]
	r.p.setObjects(r.meters, objs)
	r.p.setVisible(r.meters, len(ms) > 0)
}

// Setters that touch a widget only on change (a Refresh per second per
// widget while counting down would be wasted work) and note when the
// layout must follow.

func (p *panel) setText(l *widget.Label, s string) {
	if l.Text != s {
		l.SetText(s)
		// A one-line label keeps its size whatever it says; a wrapped
		// one's height follows its text, unless it is hidden.
		p.relayout = p.relayout || (l.Truncation == fyne.TextTruncateOff && l.Visible())
	}
}

// setLine shows s in l, which keeps its size whatever it says.
func setLine(l *lineLabel, s string) { l.SetText(s) }

// setNotice shows s in a label of the notice slot, which shows was now
// (hiding o, the label or what holds it, when s is empty). The slot keeps
// its size, so only it is laid out again.
func (p *panel) setNotice(was string, set func(string), o fyne.CanvasObject, s string) {
	if was != s {
		set(s)
		p.noticeDirty = true
	}
	if (s != "") != o.Visible() {
		setShown(o, s != "")
		p.noticeDirty = true
	}
}

// setShown shows or hides o in a reserved slot, which keeps its room
// either way: nothing around it needs laying out.
func setShown(o fyne.CanvasObject, on bool) {
	if on && !o.Visible() {
		o.Show()
	} else if !on && o.Visible() {
		o.Hide()
	}
}

func (p *panel) setVisible(o fyne.CanvasObject, on bool) {
	if on == o.Visible() {
		return
	}
	if on {
		o.Show()
	} else {
		o.Hide()
	}
	p.relayout = true
}

func setEnabled(b *widget.Button, on bool) {
	if on && b.Disabled() {
		b.Enable()
	} else if !on && !b.Disabled() {
		b.Disable()
	}
}

func setButton(b *widget.Button, text string, icon fyne.Resource) {
	if b.Text != text {
		b.Text, b.Icon = text, icon
		b.Refresh()
	}
}

func (p *panel) setObjects(c *fyne.Container, objs []fyne.CanvasObject) {
	if !slices.Equal(c.Objects, objs) {
		c.Objects = objs
		p.relayout = true
	}
}

// flush lays the panel out again after a change of shape. Fyne's desktop
// canvas would notice a changed minimum size by itself on the next frame;
// the test canvas does not, and the rendering tests must see what a user
// sees.
//
// A whole refresh re-shapes every text of the panel, so it runs only when
// a shape changed: a countdown's tick changes texts in fixed slots, which
// refresh themselves (issue 42: the panel re-shaped everything every
// second, 16 MB/s of garbage).
func (p *panel) flush() {
	switch {
	case p.relayout:
		p.relayout, p.noticeDirty = false, false
		p.content.Refresh()
	case p.noticeDirty:
		p.noticeDirty = false
		p.notice.Refresh()
	}
}
