package ui

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/ui/view"
)

// panel is the window's content. Its widgets are built once and updated in
// place from each view.View, so a redraw keeps the scroll position, focus
// and an open form. UI goroutine only.
type panel struct {
	u *UI

	banner     *fyne.Container
	bannerText *widget.Label
	summary    *widget.Label
	add        *widget.Button
	status     *widget.Label
	empty      *widget.Label
	sections   *fyne.Container
	scroll     *container.Scroll // the sections
	scrollTo   string            // Options.Section, until the person scrolls
	scrolled   bool              // scrolledTo is set
	scrolledTo fyne.Position     // where scrollToSection last put the scroll
	secs       map[string]*sectionUI
	events     []string
	eventList  *widget.List
	content    *fyne.Container
	relayout   bool // a widget changed shape since the last flush
}

func newPanel(u *UI) *panel {
	p := &panel{u: u, secs: map[string]*sectionUI{}, scrollTo: u.opts.Section}

	p.bannerText = widget.NewLabel("")
	p.bannerText.Wrapping = fyne.TextWrapWord
	p.bannerText.Importance = widget.WarningImportance
	p.banner = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), nil, p.bannerText)
	p.banner.Hide()

	title := widget.NewLabelWithStyle("subpool", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.summary = widget.NewLabel("")
	p.add = widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), p.showAddMenu)
	p.add.Importance = widget.HighImportance
	header := container.NewBorder(nil, nil, container.NewHBox(title, p.summary), p.add)

	p.status = widget.NewLabel("")
	p.status.Wrapping = fyne.TextWrapWord
	p.status.Hide()

	p.empty = widget.NewLabel("No credentials yet. Use Add to log in with Claude, ChatGPT or Google, " +
		"paste an API key, or import the login Claude Code, Codex CLI or Gemini CLI already has.")
	p.empty.Wrapping = fyne.TextWrapWord

	p.sections = container.NewVBox()
	p.eventList = widget.NewList(
		func() int { return len(p.events) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(p.events[i]) },
	)
	recent := container.NewBorder(widget.NewLabelWithStyle("Recent", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		nil, nil, nil, p.eventList)

	p.scroll = container.NewVScroll(p.sections)
	split := container.NewVSplit(p.scroll, recent)
	split.Offset = 0.7
	p.content = container.NewBorder(container.NewVBox(p.banner, header, p.status), nil, nil, nil, u.usage.withTabs(split))
	return p
}

// update shows v. Widgets change only where v differs from what is shown.
func (p *panel) update(v view.View) {
	p.setText(p.bannerText, v.Banner)
	p.setVisible(p.banner, v.Banner != "")
	p.setText(p.summary, v.Summary)
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
	p.setText(p.status, msg)
	p.setVisible(p.status, msg != "")
	p.flush()
}

// sectionUI is one provider's card.
type sectionUI struct {
	p     *panel
	card  *widget.Card
	notes *widget.Label
	rows  *fyne.Container
	byID  map[string]*rowUI
}

func newSection(p *panel) *sectionUI {
	s := &sectionUI{p: p, byID: map[string]*rowUI{}}
	s.notes = widget.NewLabel("")
	s.notes.Wrapping = fyne.TextWrapWord
	s.notes.Importance = widget.WarningImportance
	s.notes.Hide()
	s.rows = container.NewVBox()
	s.card = widget.NewCard("", "", container.NewVBox(s.notes, s.rows))
	return s
}

func (s *sectionUI) update(sec view.Section) {
	p := s.p
	if s.card.Title != sec.Title {
		s.card.SetTitle(sec.Title)
	}
	if s.card.Subtitle != sec.Summary {
		s.card.SetSubTitle(sec.Summary)
	}
	notes := ""
	for i, n := range sec.Notes {
		if i > 0 {
			notes += "\n"
		}
		notes += n
	}
	p.setText(s.notes, notes)
	p.setVisible(s.notes, notes != "")

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

// rowUI is one credential.
type rowUI struct {
	p   *panel
	row view.Row // what is shown; buttons act on it

	badge     *badge
	label     *widget.Label
	detail    *widget.Label
	line      *widget.Label
	countdown *widget.ProgressBar
	barText   string
	meters    *fyne.Container // one name and bar per window, names aligned
	bars      []*meter
	counts    *widget.Label // counters and the last reason
	relogin   *widget.Button
	reserve   *widget.Button
	serves    *widget.Label // which tools the credential serves
	tools     *widget.Check // "Let other tools use this login"
	pause     *widget.Button
	reset     *widget.Button
	remove    *widget.Button
	box       *fyne.Container
}

func newRow(p *panel) *rowUI {
	r := &rowUI{p: p, badge: newBadge()}
	r.label = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	r.detail = widget.NewLabel("")
	r.detail.Importance = widget.LowImportance
	r.line = widget.NewLabel("")
	r.countdown = widget.NewProgressBar()
	r.countdown.TextFormatter = func() string { return r.barText }
	r.meters = container.New(layout.NewFormLayout())
	r.counts = widget.NewLabel("")
	r.counts.Wrapping = fyne.TextWrapWord
	r.counts.SizeName = theme.SizeNameCaptionText

	r.relogin = widget.NewButtonWithIcon("Log in again", theme.LoginIcon(), func() { p.relogin(r.row) })
	r.relogin.Importance = widget.HighImportance
	r.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() { p.pauseOrResume(r.row) })
	r.reset = widget.NewButtonWithIcon("Reset cooldown", theme.MediaReplayIcon(), func() { p.reset(r.row) })
	r.reserve = widget.NewButtonWithIcon("Reserve…", theme.SettingsIcon(), func() { p.showReserveForm(r.row) })
	r.remove = widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), func() { p.remove(r.row) })
	r.serves = widget.NewLabel("")
	r.serves.Importance = widget.LowImportance
	r.tools = widget.NewCheck(view.ToolsToggle, func(on bool) { p.setTools(r, on) })

	head := container.NewHBox(container.NewCenter(r.badge), r.label, layout.NewSpacer(), r.detail)
	buttons := container.NewHBox(r.relogin, r.pause, r.reset, r.reserve, layout.NewSpacer(), r.remove)
	toolsLine := container.NewHBox(r.serves, layout.NewSpacer(), r.tools)
	r.box = container.NewVBox(head, r.line, r.countdown, r.meters, r.counts, toolsLine, buttons, widget.NewSeparator())
	return r
}

func (r *rowUI) update(row view.Row) {
	p := r.p
	r.row = row
	r.badge.set(row.Badge.Text, row.Badge.Level)
	p.setText(r.label, row.Label)
	p.setText(r.detail, row.Detail)
	p.setText(r.line, row.Line)

	// While counting down, the bar carries the line: one widget, not two
	// saying the same.
	if row.Counting && (r.countdown.Value != row.Countdown || r.barText != row.Line) {
		r.barText = row.Line
		r.countdown.SetValue(row.Countdown)
	}
	p.setVisible(r.countdown, row.Counting)
	// An empty line is one the badge and the bars already say.
	p.setVisible(r.line, !row.Counting && row.Line != "")

	r.setMeters(row.Meters)

	counts := row.Counts
	if row.Reason != "" {
		counts += " · last: " + row.Reason
	}
	p.setText(r.counts, counts)

	if row.ReloginText != "" && r.relogin.Text != row.ReloginText {
		r.relogin.SetText(row.ReloginText)
	}
	p.setVisible(r.relogin, row.ReloginText != "")
	setEnabled(r.relogin, row.CanRelogin)
	if row.Paused {
		setButton(r.pause, "Resume", theme.MediaPlayIcon())
		setEnabled(r.pause, row.CanResume)
	} else {
		setButton(r.pause, "Pause", theme.MediaPauseIcon())
		setEnabled(r.pause, row.CanPause)
	}
	setEnabled(r.reset, row.CanReset)
	p.setVisible(r.reserve, row.Kind == api.KindOAuth)
	setEnabled(r.reserve, row.CanReserve)
	setEnabled(r.remove, row.CanRemove)

	p.setText(r.serves, "Serves "+row.Serves)
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
		objs = append(objs, r.bars[i].name, r.bars[i].ov)
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
		// A new text can change a size; a hidden label's cannot.
		p.relayout = p.relayout || l.Visible()
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
func (p *panel) flush() {
	if p.relayout {
		p.relayout = false
		p.content.Refresh()
	}
}
