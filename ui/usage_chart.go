package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

// palette colours the chart's credentials (Tableau 10: told apart by most
// eyes, readable on light and dark backgrounds). The legend names each
// colour, so colour is never the only way to tell them apart.
var palette = []color.NRGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xe1, 0x57, 0x59, 0xff},
	{0x76, 0xb7, 0xb2, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff},
}

var otherColor = color.NRGBA{0xba, 0xb0, 0xac, 0xff}

func seriesColor(s int) color.Color {
	if s < 0 {
		return otherColor
	}
	return palette[s%len(palette)]
}

// chartHeight is the bars' area; the axis labels go below it.
const chartHeight = 150

// chart draws stacked bars with canvas rectangles: one column per hour or
// day, one rectangle per credential, bottom up. Hovering a bar names it
// and its total (onHover), since the axis labels only every few bars.
type chart struct {
	widget.BaseWidget
	bars    []view.Bar
	max     int64
	scale   [2]string        // the gridlines' values, top and middle
	onHover func(tip string) // "" when the pointer leaves
}

var _ desktop.Hoverable = (*chart)(nil)

func newChart(onHover func(string)) *chart {
	c := &chart{onHover: onHover}
	c.ExtendBaseWidget(c)
	return c
}

func (c *chart) set(bars []view.Bar, max int64, scale [2]string) {
	c.bars, c.max, c.scale = bars, max, scale
	c.Refresh()
}

// barAt is the bar under x, or -1.
func (c *chart) barAt(x float32) int {
	if len(c.bars) == 0 || c.Size().Width <= 0 {
		return -1
	}
	i := int(x / (c.Size().Width / float32(len(c.bars))))
	if i < 0 || i >= len(c.bars) {
		return -1
	}
	return i
}

func (c *chart) MouseIn(e *desktop.MouseEvent) { c.MouseMoved(e) }
func (c *chart) MouseMoved(e *desktop.MouseEvent) {
	if i := c.barAt(e.Position.X); i >= 0 && c.onHover != nil {
		c.onHover(c.bars[i].Tip)
	}
}
func (c *chart) MouseOut() {
	if c.onHover != nil {
		c.onHover("")
	}
}

func (c *chart) CreateRenderer() fyne.WidgetRenderer {
	r := &chartRenderer{c: c, base: canvas.NewLine(color.Black),
		grid: [2]*canvas.Line{canvas.NewLine(color.Black), canvas.NewLine(color.Black)},
		glab: [2]*canvas.Text{canvas.NewText("", color.Black), canvas.NewText("", color.Black)}}
	r.Refresh()
	return r
}

type chartRenderer struct {
	c     *chart
	base  *canvas.Line
	grid  [2]*canvas.Line       // the peak and half of it
	glab  [2]*canvas.Text       // their values
	rects [][]*canvas.Rectangle // per bar, per part
	axis  []*canvas.Text        // per bar; empty text for most
	objs  []fyne.CanvasObject
}

func (r *chartRenderer) MinSize() fyne.Size {
	th := r.c.Theme()
	return fyne.NewSize(float32(len(r.c.bars))*4, chartHeight+th.Size(theme.SizeNameCaptionText)+th.Size(theme.SizeNamePadding))
}

func (r *chartRenderer) Layout(s fyne.Size) {
	n := len(r.c.bars)
	if n == 0 {
		return
	}
	th := r.c.Theme()
	pad := th.Size(theme.SizeNamePadding)
	h := s.Height - th.Size(theme.SizeNameCaptionText) - pad
	slot := s.Width / float32(n)
	gap := max(1, slot/5)
	r.base.Position1 = fyne.NewPos(0, h)
	r.base.Position2 = fyne.NewPos(s.Width, h)
	for i, g := range r.grid {
		y := h * float32(i) / 2
		g.Position1, g.Position2 = fyne.NewPos(0, y), fyne.NewPos(s.Width, y)
		// The value sits just under its line, at the left, where the
		// oldest bars are most often empty.
		r.glab[i].Move(fyne.NewPos(2, y+1))
		r.glab[i].Resize(r.glab[i].MinSize())
	}
	for i, b := range r.c.bars {
		x := float32(i)*slot + gap/2
		y := h
		for j, p := range b.Parts {
			ph := float32(0)
			if r.c.max > 0 {
				ph = h * float32(p.Tokens) / float32(r.c.max)
			}
			// A part too thin to see still shows as a sliver: a request
			// happened then.
			ph = max(ph, 1)
			y -= ph
			r.rects[i][j].Move(fyne.NewPos(x, y))
			r.rects[i][j].Resize(fyne.NewSize(slot-gap, ph))
		}
		t := r.axis[i]
		ts := t.MinSize()
		// The last label ends at the right edge rather than past it.
		tx := min(max(0, x+(slot-gap)/2-ts.Width/2), s.Width-ts.Width)
		t.Move(fyne.NewPos(tx, h+pad/2))
		t.Resize(ts)
	}
}

func (r *chartRenderer) Refresh() {
	th := r.c.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	r.base.StrokeColor = th.Color(theme.ColorNameSeparator, v)
	r.base.StrokeWidth = 1
	r.rects, r.axis = r.rects[:0], r.axis[:0]
	r.objs = r.objs[:0]
	for i, g := range r.grid {
		g.StrokeColor = th.Color(theme.ColorNameInputBorder, v)
		g.StrokeWidth = 1
		t := r.glab[i]
		t.Text, t.Color = r.c.scale[i], th.Color(theme.ColorNamePlaceHolder, v)
		t.TextSize = th.Size(theme.SizeNameCaptionText)
		// No grid over an empty chart: it would suggest a scale.
		if r.c.max > 0 {
			r.objs = append(r.objs, g, t)
		}
	}
	for _, b := range r.c.bars {
		var parts []*canvas.Rectangle
		for _, p := range b.Parts {
			rc := canvas.NewRectangle(seriesColor(p.Series))
			parts = append(parts, rc)
			r.objs = append(r.objs, rc)
		}
		r.rects = append(r.rects, parts)
		t := canvas.NewText(b.Label, th.Color(theme.ColorNamePlaceHolder, v))
		t.TextSize = th.Size(theme.SizeNameCaptionText)
		t.TextStyle.Bold = b.Now
		r.axis = append(r.axis, t)
		r.objs = append(r.objs, t)
	}
	r.objs = append(r.objs, r.base)
	r.Layout(r.c.Size())
	canvas.Refresh(r.c)
}

func (r *chartRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *chartRenderer) Destroy()                     {}

// swatch is a small square of a credential's colour.
func swatch(s int) *canvas.Rectangle {
	r := canvas.NewRectangle(seriesColor(s))
	r.SetMinSize(fyne.NewSize(10, 10))
	r.CornerRadius = 2
	return r
}
