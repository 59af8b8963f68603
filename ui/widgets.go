package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
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

// levelTheme recolours a standard widget by level: a ProgressBar draws in
// the primary colour, so overriding primary turns it green, amber or red.
type levelTheme struct{ level view.Level }

func (t levelTheme) base() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (t levelTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	fill, text := levelColors(t.level)
	switch n {
	case theme.ColorNamePrimary:
		return t.base().Color(fill, v)
	case theme.ColorNameForegroundOnPrimary:
		return t.base().Color(text, v)
	}
	return t.base().Color(n, v)
}

func (t levelTheme) Font(s fyne.TextStyle) fyne.Resource     { return t.base().Font(s) }
func (t levelTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return t.base().Icon(n) }
func (t levelTheme) Size(n fyne.ThemeSizeName) float32       { return t.base().Size(n) }

// meter is one usage window: its name beside a bar coloured by level, with
// the percentage and the reset inside. The binding window's name is bold
// and marked, so which window limits the credential does not rest on
// colour alone.
type meter struct {
	name  *widget.Label
	ov    *container.ThemeOverride // the bar, recoloured by level
	bar   *widget.ProgressBar
	text  string
	level view.Level
}

func newMeter() *meter {
	m := &meter{bar: widget.NewProgressBar(), level: view.LevelGood, name: widget.NewLabel("")}
	m.bar.TextFormatter = func() string { return m.text }
	m.ov = container.NewThemeOverride(m.bar, levelTheme{m.level})
	return m
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
	if m.text == text && m.bar.Value == mt.Value && m.level == mt.Level {
		return renamed
	}
	m.text, m.level = text, mt.Level
	m.bar.Value = mt.Value
	m.ov.Theme = levelTheme{mt.Level}
	m.ov.Refresh()
	return renamed
}

// badge is a row's state word on a pill of its level's colour. The word
// carries the meaning; the colour only helps.
type badge struct {
	widget.BaseWidget
	text  string
	level view.Level
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
