package ui

import (
	"context"
	"fmt"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

// reserveChoices are the reserves the panel offers, as `subpool reserve`
// takes them; the command line takes any percent up to 99.
type reserveChoice struct {
	label   string
	percent int // -1: back to [usage] reserve
}

var reserveChoices = []reserveChoice{
	{"As configured ([usage] reserve)", -1},
	{"None", 0},
	{"5%", 5}, {"10%", 10}, {"15%", 15}, {"20%", 20}, {"25%", 25}, {"30%", 30},
}

// showReserveForm asks how much of a subscription's binding window to keep
// for the person's own use (claude.ai, ChatGPT): subpool stops sending to
// it at 100 minus that percent until the window resets.
func (p *panel) showReserveForm(row view.Row) {
	labels := make([]string, len(reserveChoices))
	for i, c := range reserveChoices {
		labels[i] = c.label
	}
	sel := widget.NewSelect(labels, nil)
	sel.SetSelected(labels[0])
	if i := slices.IndexFunc(reserveChoices, func(c reserveChoice) bool { return row.Reserve > 0 && c.percent == row.Reserve }); i >= 0 {
		sel.SetSelected(labels[i])
	}
	help := widget.NewLabel("Kept for your own use in the " + view.ProviderTitle(row.Provider) +
		" app: subpool stops sending to this subscription when its binding window reaches 100% minus the reserve, until that window resets.")
	help.Wrapping = fyne.TextWrapWord
	items := []*widget.FormItem{widget.NewFormItem("Reserve", sel), widget.NewFormItem("", help)}
	d := dialog.NewForm("Reserve for "+row.Label, "Set", "Cancel", items, func(ok bool) {
		if !ok {
			return
		}
		i := slices.Index(labels, sel.Selected)
		if i < 0 {
			return
		}
		percent := reserveChoices[i].percent
		what := sel.Selected
		if percent < 0 {
			what = "as configured"
		}
		id, label := row.ID, row.Label
		p.setStatus(fmt.Sprintf("Setting the reserve of %s…", label), false)
		p.u.async("reserve", func(ctx context.Context) (func(), error) {
			if err := p.u.opts.Backend.Reserve(ctx, id, percent); err != nil {
				return nil, fmt.Errorf("could not set the reserve of %s: %w", label, err)
			}
			return func() { p.setStatus(fmt.Sprintf("Reserve of %s: %s.", label, what), false) }, nil
		})
	}, p.u.win)
	d.Resize(d.MinSize().AddWidthHeight(120, 0))
	d.Show()
}
