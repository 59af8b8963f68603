package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

// levelColors maps a level to theme colour names (fill, text on it), so the
// colours follow the light and dark themes.
func levelColors(l view.Level) (fill, text fyne.ThemeColorName) {
	switch l {
	case view.LevelGood:
		return theme.ColorNameSuccess, theme.ColorNameForegroundOnSuccess
	case view.LevelInfo:
		return theme.ColorNamePrimary, theme.ColorNameForegroundOnPrimary
	case view.LevelWarn:
		return theme.ColorNameWarning, theme.ColorNameForegroundOnWarning
	case view.LevelBad:
		return theme.ColorNameError, theme.ColorNameForegroundOnError
	}
	return theme.ColorNameDisabledButton, theme.ColorNameForeground
}

// levelBar is a bar filled to a fraction in its level's colour, with its
// text above it in the ordinary text colour: the text never sits on the
// fill, so it reads at the theme's contrast whatever the level.
//
// It paints its own rectangles and recolours them in place. A
// container.ThemeOverride did this before, and Fyne 2.7's ThemeOverride
// gives its subtree a new theme scope on every Refresh; the painter keys
// its font cache by scope and never evicts it, so each countdown tick
// parsed the fonts anew and kept them (issue 42: 10 MiB/s).
type levelBar struct {
	widget.BaseWidget
	value float64
	text  string
	level view.Level
}

func newLevelBar(level view.Level) *levelBar {
	b := &levelBar{level: level}
	b.ExtendBaseWidget(b)
	return b
}

// set shows value (0..1) and text at level, refreshing only on a change.
func (b *levelBar) set(value float64, text string, level view.Level) {
	if b.value == value && b.text == text && b.level == level {
		return
	}
	b.value, b.text, b.level = min(1, max(0, value)), text, level
	b.Refresh()
}

func (b *levelBar) CreateRenderer() fyne.WidgetRenderer {
	r := &levelBarRenderer{b: b, track: canvas.NewRectangle(color.Transparent),
		fill: canvas.NewRectangle(color.Transparent)}
	r.Refresh()
	return r
}

// barThickness is the height of the bar under the text.
const barThickness = 6

type levelBarRenderer struct {
	b           *levelBar
	track, fill *canvas.Rectangle
	// The text is drawn in runs (runs.go): a countdown's tick or a
	// meter's percentage makes a small texture, not a line-wide one.
	runs     textRuns
	color    color.Color
	textSize float32
	objs     []fyne.CanvasObject
}

// MinSize is one line of text over the bar, and no width of its own: a
// long reason would otherwise widen the window (its text ends in an
// ellipsis instead).
func (r *levelBarRenderer) MinSize() fyne.Size {
	t := fyne.MeasureText("M", r.textSize, fyne.TextStyle{})
	pad := r.b.Theme().Size(theme.SizeNameInnerPadding)
	return fyne.NewSize(t.Width, t.Height+pad/2+barThickness)
}

func (r *levelBarRenderer) Layout(s fyne.Size) {
	shown := r.runs.set(r.b.text, s.Width, r.color, r.textSize, fyne.TextStyle{})
	r.runs.layout(fyne.Position{}, s.Width, fyne.TextAlignLeading)
	r.objs = append(append(r.objs[:0], r.track, r.fill), shown...)
	y := s.Height - barThickness
	r.track.Move(fyne.NewPos(0, y))
	r.track.Resize(fyne.NewSize(s.Width, barThickness))
	r.fill.Move(fyne.NewPos(0, y))
	r.fill.Resize(fyne.NewSize(s.Width*float32(r.b.value), barThickness))
}

func (r *levelBarRenderer) Refresh() {
	th := r.b.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	fill, _ := levelColors(r.b.level)
	r.track.FillColor = th.Color(theme.ColorNameInputBorder, v)
	r.track.CornerRadius = barThickness / 2
	r.fill.FillColor = th.Color(fill, v)
	r.fill.CornerRadius = barThickness / 2
	r.color = th.Color(theme.ColorNameForeground, v)
	r.textSize = th.Size(theme.SizeNameText)
	r.Layout(r.b.Size())
	r.track.Refresh()
	r.fill.Refresh()
	canvas.Refresh(r.b)
}

func (r *levelBarRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *levelBarRenderer) Destroy()                     {}

// fitText is s, or as much of it as fits in width followed by "…".
func fitText(s string, width, size float32, style fyne.TextStyle) string {
	if fyne.MeasureText(s, size, style).Width <= width {
		return s
	}
	runes := []rune(s)
	lo, hi := 0, len(runes) // the longest prefix that fits is in [lo, hi)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if fyne.MeasureText(string(runes[:mid])+"…", size, style).Width <= width {
			lo = mid
		} else {
			hi = mid
		}
	}
	return string(runes[:lo]) + "…"
}

// meter is one usage window: its name beside a bar coloured by level, with
// the percentage and the reset above it. The binding window's name is bold
// and marked, so which window limits the credential does not rest on
// colour alone.
type meter struct {
	name *widget.Label
	bar  *levelBar
}

func newMeter() *meter {
	return &meter{bar: newLevelBar(view.LevelGood), name: widget.NewLabel("")}
}

// bindingMark is put before the binding window's name.
const bindingMark = "▸ "

// set shows mt and reports whether the name changed, which can change the
// width of the names' column.
func (m *meter) set(mt view.Meter) (renamed bool) {
	name := mt.Name
	if mt.Binding {
		name = bindingMark + name
	}
	if m.name.Text != name || m.name.TextStyle.Bold != mt.Binding {
		m.name.Text = name
		m.name.TextStyle.Bold = mt.Binding
		m.name.Refresh()
		renamed = true
	}
	text := strings.TrimPrefix(mt.Text, mt.Name+" ")
	if mt.Resets != "" {
		text += " · " + mt.Resets
	}
	m.bar.set(mt.Value, text, mt.Level)
	return renamed
}

// badge is a row's state word on a pill of its level's colour. The word
// carries the meaning; the colour only helps.
type badge struct {
	widget.BaseWidget
	text  string
	level view.Level
	// room are words whose widest the badge keeps room for, whichever it
	// shows; none: its own word's.
	room []string
}

func newBadge() *badge {
	b := &badge{}
	b.ExtendBaseWidget(b)
	return b
}

func (b *badge) set(text string, level view.Level) {
	if b.text == text && b.level == level {
		return
	}
	b.text, b.level = text, level
	b.Refresh()
}

func (b *badge) CreateRenderer() fyne.WidgetRenderer {
	r := &badgeRenderer{b: b, bg: canvas.NewRectangle(color.Transparent), txt: canvas.NewText("", color.Black)}
	r.txt.TextStyle.Bold = true
	r.Refresh()
	return r
}

type badgeRenderer struct {
	b   *badge
	bg  *canvas.Rectangle
	txt *canvas.Text
}

func (r *badgeRenderer) MinSize() fyne.Size {
	pad := r.b.Theme().Size(theme.SizeNameInnerPadding)
	t := fyne.MeasureText(r.txt.Text, r.txt.TextSize, r.txt.TextStyle)
	for _, w := range r.b.room {
		t = t.Max(fyne.MeasureText(w, r.txt.TextSize, r.txt.TextStyle))
	}
	return fyne.NewSize(t.Width+2*pad, t.Height+pad/2)
}

func (r *badgeRenderer) Layout(s fyne.Size) {
	r.bg.Resize(s)
	t := r.txt.MinSize()
	r.txt.Resize(t)
	r.txt.Move(fyne.NewPos((s.Width-t.Width)/2, (s.Height-t.Height)/2))
}

func (r *badgeRenderer) Refresh() {
	th := r.b.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	fill, text := levelColors(r.b.level)
	r.bg.FillColor = th.Color(fill, v)
	r.bg.CornerRadius = th.Size(theme.SizeNameInputRadius)
	r.txt.Text = r.b.text
	r.txt.Color = th.Color(text, v)
	r.txt.TextSize = th.Size(theme.SizeNameCaptionText)
	r.Layout(r.b.Size())
	r.bg.Refresh()
	r.txt.Refresh()
}

func (r *badgeRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.bg, r.txt} }
func (r *badgeRenderer) Destroy()                     {}
