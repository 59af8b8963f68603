package ui

import (
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Fyne's GL painter gives every distinct text it draws a texture of the
// text's size, kept for a minute after the text was last drawn, and Mesa
// keeps each texture's pixels in the C heap. A line whose number ticks
// every second ("cooling 12s · budget spent (3 requests left until
// 00:15:00)") was a new line-wide texture a second, some sixty of them
// alive per line: the open panel grew 16 MiB over its first minutes
// (issue 42). So a line that changes is drawn in runs: each word with a
// digit in it ("12s", "2/3", "00:15:00") is a text of its own and the
// words between are another, so a tick makes one small texture, which
// every other line showing "12s" shares, and the line's words stay one
// texture all along.

// splitRuns cuts s into the runs it is drawn in, in order; joined they
// are s. A number word is a maximal run of letters, digits and ":.%/_-"
// holding a digit; what lies between number words is one run.
func splitRuns(s string) []string {
	var out []string
	start, i := 0, 0
	for i < len(s) {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j, digit := i, false
		for j < len(s) && isWordByte(s[j]) {
			digit = digit || (s[j] >= '0' && s[j] <= '9')
			j++
		}
		if digit {
			if start < i {
				out = append(out, s[start:i])
			}
			out = append(out, s[i:j])
			start = j
		}
		i = j
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func isWordByte(b byte) bool {
	switch {
	case b >= '0' && b <= '9', b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
		return true
	}
	switch b {
	case ':', '.', '%', '/', '_', '-':
		return true
	}
	return false
}

// fitRuns is s's runs, cut to width: the run that does not fit ends in
// "…" and those after it are left out. Each run is measured on its own, so
// a tick measures (and shapes) only the run that changed; Fyne keeps every
// text it measured for a minute too.
func fitRuns(s string, width, size float32, style fyne.TextStyle) []string {
	runs := splitRuns(s)
	x := float32(0)
	for i, r := range runs {
		w := fyne.MeasureText(r, size, style).Width
		if x+w > width {
			return append(runs[:i:i], fitText(r, width-x, size, style))
		}
		x += w
	}
	return runs
}

// textRuns is one line drawn as its runs, the canvas texts reused from one
// text to the next.
type textRuns struct {
	texts []*canvas.Text
	shown []fyne.CanvasObject // texts[:n], as the renderer's objects
}

// set shows s in c at size and style, cut to width; it returns the
// objects to draw.
func (t *textRuns) set(s string, width float32, c color.Color, size float32, style fyne.TextStyle) []fyne.CanvasObject {
	runs := fitRuns(s, width, size, style)
	for len(t.texts) < len(runs) {
		t.texts = append(t.texts, canvas.NewText("", c))
	}
	t.shown = t.shown[:0]
	for i, r := range runs {
		txt := t.texts[i]
		if txt.Text != r || txt.Color != c || txt.TextSize != size || txt.TextStyle != style {
			txt.Text, txt.Color, txt.TextSize, txt.TextStyle = r, c, size, style
			txt.Refresh()
		}
		t.shown = append(t.shown, txt)
	}
	return t.shown
}

// text is what the runs show, joined.
func (t *textRuns) text() string {
	var b strings.Builder
	for _, o := range t.shown {
		b.WriteString(o.(*canvas.Text).Text)
	}
	return b.String()
}

// layout puts the runs side by side in a line of width w starting at pos,
// against the end of the line when align says so.
func (t *textRuns) layout(pos fyne.Position, w float32, align fyne.TextAlign) {
	var sizes []fyne.Size
	total := float32(0)
	for _, o := range t.shown {
		s := o.MinSize()
		sizes = append(sizes, s)
		total += s.Width
	}
	x := pos.X
	switch align {
	case fyne.TextAlignTrailing:
		x += w - total
	case fyne.TextAlignCenter:
		x += (w - total) / 2
	}
	for i, o := range t.shown {
		o.Move(fyne.NewPos(x, pos.Y))
		o.Resize(sizes[i])
		x += sizes[i].Width
	}
}

// lineLabel is a label drawn in runs: what a widget.Label with an ellipsis
// shows, at its size and place, for a text that changes often. Each line
// of its text ("\n" between) is one line, cut to the width.
type lineLabel struct {
	widget.BaseWidget
	Text       string
	Importance widget.Importance
	Alignment  fyne.TextAlign
	SizeName   fyne.ThemeSizeName
}

// oneLine is a label that never wraps nor widens the window: what does not
// fit ends in an ellipsis.
func oneLine(imp widget.Importance) *lineLabel {
	l := &lineLabel{Importance: imp}
	l.ExtendBaseWidget(l)
	return l
}

func (l *lineLabel) SetText(s string) {
	if l.Text != s {
		l.Text = s
		l.Refresh()
	}
}

func (l *lineLabel) CreateRenderer() fyne.WidgetRenderer {
	r := &lineLabelRenderer{l: l}
	r.Refresh()
	return r
}

type lineLabelRenderer struct {
	l     *lineLabel
	lines []textRuns
	objs  []fyne.CanvasObject
}

// importanceColor is the colour a widget.Label of imp draws its text in.
func importanceColor(imp widget.Importance) fyne.ThemeColorName {
	switch imp {
	case widget.LowImportance:
		return theme.ColorNameDisabled
	case widget.HighImportance:
		return theme.ColorNamePrimary
	case widget.DangerImportance:
		return theme.ColorNameError
	case widget.WarningImportance:
		return theme.ColorNameWarning
	case widget.SuccessImportance:
		return theme.ColorNameSuccess
	}
	return theme.ColorNameForeground
}

func (r *lineLabelRenderer) textSize() float32 {
	name := r.l.SizeName
	if name == "" {
		name = theme.SizeNameText
	}
	return r.l.Theme().Size(name)
}

// MinSize is a truncating widget.Label's: its lines, and room for a
// letter and the ellipsis.
func (r *lineLabelRenderer) MinSize() fyne.Size {
	th := r.l.Theme()
	pad := th.Size(theme.SizeNameInnerPadding)
	m := fyne.MeasureText("M…", r.textSize(), fyne.TextStyle{})
	n := float32(strings.Count(r.l.Text, "\n"))
	return fyne.NewSize(m.Width+2*pad, (n+1)*m.Height+2*pad)
}

func (r *lineLabelRenderer) Layout(s fyne.Size) {
	th := r.l.Theme()
	pad := th.Size(theme.SizeNameInnerPadding)
	size := r.textSize()
	c := th.Color(importanceColor(r.l.Importance), fyne.CurrentApp().Settings().ThemeVariant())
	w := s.Width - 2*pad
	lines := strings.Split(r.l.Text, "\n")
	for len(r.lines) < len(lines) {
		r.lines = append(r.lines, textRuns{})
	}
	r.objs = r.objs[:0]
	y, step := pad, fyne.MeasureText("M", size, fyne.TextStyle{}).Height
	for i, line := range lines {
		r.objs = append(r.objs, r.lines[i].set(line, w, c, size, fyne.TextStyle{})...)
		r.lines[i].layout(fyne.NewPos(pad, y), w, r.l.Alignment)
		y += step
	}
}

// text is what the label shows, its lines joined by "\n".
func (r *lineLabelRenderer) text() string {
	var out []string
	for i := range strings.Split(r.l.Text, "\n") {
		out = append(out, r.lines[i].text())
	}
	return strings.Join(out, "\n")
}

func (r *lineLabelRenderer) Refresh() {
	r.Layout(r.l.Size())
	canvas.Refresh(r.l)
}

func (r *lineLabelRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *lineLabelRenderer) Destroy()                     {}
