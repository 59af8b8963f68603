package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/ui/view"
)

// setTools is the row's "Let other tools use this login": it opens a
// subscription login to every tool, or keeps it for its own tool again,
// as `subpool tools ID all|own` does. Opening a Claude login first says
// what Anthropic bills for it. The check follows the proxy: the new state
// arrives as credential_updated, and a refused call is undone on screen.
func (p *panel) setTools(r *rowUI, on bool) {
	row := r.row
	if on == row.OtherTools {
		return // the panel catching up with the proxy, not a tap
	}
	if on && row.ToolsWarning != "" {
		msg := widget.NewLabel(row.ToolsWarning)
		msg.Wrapping = fyne.TextWrapWord
		d := dialog.NewCustomConfirm("Let other tools use "+row.Label+"?", "Let them", "Cancel", msg, func(ok bool) {
			if !ok {
				r.tools.SetChecked(r.row.OtherTools)
				return
			}
			p.sendTools(r, row, true)
		}, p.u.win)
		d.Resize(fyne.NewSize(440, d.MinSize().Height+60))
		d.Show()
		return
	}
	p.sendTools(r, row, on)
}

func (p *panel) sendTools(r *rowUI, row view.Row, on bool) {
	id, label := row.ID, row.Label
	own := api.ToolTitle(row.OwnTool) + " only"
	what := "every tool"
	if !on {
		what = own
	}
	p.setStatus(fmt.Sprintf("Letting %s serve %s…", label, what), false)
	p.u.async("tools", func(ctx context.Context) (func(), error) {
		if err := p.u.opts.Backend.SetOtherTools(ctx, id, on); err != nil {
			p.u.do(func() {
				if r.row.ID == id {
					r.tools.SetChecked(r.row.OtherTools)
				}
			})
			return nil, fmt.Errorf("could not change which tools %s serves: %w", label, err)
		}
		return func() {
			if on {
				p.setStatus(label+" now serves every tool.", false)
			} else {
				p.setStatus(label+" serves "+own+" again.", false)
			}
		}, nil
	})
}
