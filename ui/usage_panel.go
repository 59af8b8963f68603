package ui

import (
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

// Span choices as the radio group shows them.
const (
	spanHoursText = "24 hours"
	spanDaysText  = "30 days"
)

// usageWidgets is the Usage tab's content, built once and updated from
// each view.UsageView. UI goroutine only.
type usageWidgets struct {
	uu *usageUI

	title   *widget.Label
	span    *widget.RadioGroup
	note    *widget.Label
	hover   string // the bar under the pointer, shown in the title
	chart   *chart
	legend  *fyne.Container
	today   *widget.Label
	creds   *fyne.Container
	who     *widget.Label // by client key, then by tool
	recent  *fyne.Container
	content fyne.CanvasObject

	last view.UsageView
}

func newUsageWidgets(uu *usageUI) *usageWidgets {
	w := &usageWidgets{uu: uu}
	w.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.span = widget.NewRadioGroup([]string{spanHoursText, spanDaysText}, func(s string) {
		if s == spanDaysText {
			uu.setSpan(view.SpanDays)
		} else {
			uu.setSpan(view.SpanHours)
		}
	})
	w.span.Horizontal = true
	w.span.Required = true
	w.span.Selected = spanHoursText
	w.note = widget.NewLabel("")
	w.note.Wrapping = fyne.TextWrapWord
	w.note.Importance = widget.WarningImportance
	w.note.Hide()
	w.chart = newChart(func(tip string) {
		w.hover = tip
		w.showTitle()
	})
	w.legend = container.NewGridWithColumns(3)
	w.today = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.today.Wrapping = fyne.TextWrapWord
	w.creds = container.NewVBox()
	w.who = widget.NewLabel("")
	w.who.Wrapping = fyne.TextWrapWord
	w.recent = container.NewVBox()

	heading := func(s string) *widget.Label {
		return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	w.content = container.NewVScroll(container.NewVBox(
		container.NewBorder(nil, nil, nil, w.span, w.title),
		w.note,
		w.chart,
		container.NewPadded(w.legend),
		widget.NewSeparator(),
		w.today,
		container.NewPadded(w.creds),
		w.who,
		widget.NewSeparator(),
		heading("Last requests"),
		w.recent,
	))
	return w
}

// showTitle names the chart, or while the pointer is on a bar, that bar:
// the axis names only every few.
func (w *usageWidgets) showTitle() {
	text := w.last.Title
	if w.hover != "" {
		text = w.hover
	}
	if w.title.Text != text {
		w.title.SetText(text)
	}
}

// update shows v; lists are rebuilt only when they changed, and the tab
// laid out again then (as panel.flush does, for the test canvas's sake).
func (w *usageWidgets) update(v view.UsageView) {
	old := w.last
	w.last = v
	defer w.content.Refresh()
	w.showTitle()
	if w.note.Text != v.Note {
		w.note.SetText(v.Note)
	}
	if (v.Note != "") != w.note.Visible() {
		if v.Note != "" {
			w.note.Show()
		} else {
			w.note.Hide()
		}
	}
	if !slices.EqualFunc(old.Bars, v.Bars, barEqual) || old.Max != v.Max || w.chart.bars == nil {
		w.chart.set(v.Bars, v.Max, v.Scale)
	}
	if !slices.Equal(old.Legend, v.Legend) || len(w.legend.Objects) == 0 && len(v.Legend) > 0 {
		w.legend.Objects = nil
		for _, l := range v.Legend {
			w.legend.Add(container.NewBorder(nil, nil, container.NewCenter(swatch(l.Series)), nil, small(l.Label+" · "+l.Tokens, false)))
		}
		w.legend.Refresh()
	}
	if w.today.Text != v.Today {
		w.today.SetText(v.Today)
	}
	setLines(w.creds, old.Credentials, v.Credentials)
	who := strings.TrimSpace(v.ClientsText + "\n" + v.AppsText)
	if w.who.Text != who {
		w.who.SetText(who)
	}
	if (who != "") != w.who.Visible() {
		if who != "" {
			w.who.Show()
		} else {
			w.who.Hide()
		}
	}
	if !slices.Equal(old.Recent, v.Recent) || len(w.recent.Objects) != len(v.Recent) {
		w.recent.Objects = nil
		for _, r := range v.Recent {
			w.recent.Add(recentRow(r))
		}
		w.recent.Refresh()
	}
}

func barEqual(a, b view.Bar) bool {
	return a.Label == b.Label && a.Total == b.Total && a.Now == b.Now && slices.Equal(a.Parts, b.Parts)
}

// setLines shows today's totals by credential, one row each: its chart
// colour, its name, and the numbers.
func setLines(c *fyne.Container, old, lines []view.UsageLine) {
	if slices.Equal(old, lines) && len(c.Objects) == len(lines) {
		return
	}
	c.Objects = nil
	for _, l := range lines {
		c.Add(container.NewBorder(nil, nil, container.NewCenter(swatch(l.Series)), small(l.Detail, true), small(l.Name, false)))
	}
	c.Refresh()
}

// recentRow is one finished request: when, its class on a coloured pill
// (the word says it; the colour helps), and what it was.
func recentRow(r view.RecentLine) fyne.CanvasObject {
	when := widget.NewLabel(r.Time)
	when.TextStyle.Monospace = true
	b := newBadge()
	b.set(r.Class, r.Level)
	text := widget.NewLabel(r.Text)
	text.Truncation = fyne.TextTruncateEllipsis
	return container.NewBorder(nil, nil, container.NewHBox(when, container.NewCenter(b)), nil, text)
}

// small is one line of text without a label's padding: the Usage tab has
// many short lines, and a window's height to show them in.
func small(s string, dim bool) *canvas.Text {
	c := theme.Color(theme.ColorNameForeground)
	if dim {
		c = theme.Color(theme.ColorNamePlaceHolder)
	}
	t := canvas.NewText(s, c)
	t.TextSize = theme.Size(theme.SizeNameText)
	if dim {
		t.TextSize = theme.Size(theme.SizeNameCaptionText)
	}
	return t
}
