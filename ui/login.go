package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/ui/view"
)

// loginUI is the dialog of a login in progress: the address on one line
// that scrolls rather than wraps (a wrapped address pushed the tabs down,
// issue 42), a button that copies it, and a field for the address the
// browser ended on, for when the login's callback cannot reach the proxy.
// It floats over the panel, so nothing under it moves, and Close dismisses
// it; the login itself goes on until it finishes or times out.
type loginUI struct {
	d      dialog.Dialog
	addr   *widget.Entry
	copy   *widget.Button
	pasted *widget.Entry
	finish *widget.Button
	note   *widget.Label
}

func (p *panel) showLogin(provider, address string, opened bool) *loginUI {
	name := view.LoginTitle(provider)
	l := &loginUI{addr: widget.NewEntry(), pasted: widget.NewEntry(), note: widget.NewLabel("")}
	l.addr.SetText(address)
	// The address stays as given: typing in it changes nothing.
	l.addr.OnChanged = func(s string) {
		if s != address {
			l.addr.SetText(address)
		}
	}
	l.copy = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		p.u.app.Clipboard().SetContent(address)
		l.note.SetText("Copied. Paste it into the browser where you are logged in to " + name + ".")
	})
	l.pasted.SetPlaceHolder("http://localhost:…/callback?code=…")
	l.finish = widget.NewButton("Finish login", func() { p.finishLogin(l, provider) })
	l.finish.Importance = widget.HighImportance
	l.note.Wrapping = fyne.TextWrapWord

	first := "Your browser opened the " + name + " login page. If it did not, open this address:"
	if !opened {
		first = "Open this address in your browser to log in to " + name + ":"
	}
	intro := widget.NewLabel(first)
	intro.Wrapping = fyne.TextWrapWord
	back := widget.NewLabel("When you are done, the browser comes back to subpool by itself. " +
		"If it ends on a page that cannot be reached, paste that page's address here:")
	back.Wrapping = fyne.TextWrapWord
	content := container.NewVBox(intro,
		container.NewBorder(nil, nil, nil, l.copy, l.addr),
		back,
		container.NewBorder(nil, nil, nil, l.finish, l.pasted),
		l.note)
	l.d = dialog.NewCustom("Log in to "+name, "Close", content, p.u.win)
	l.d.Resize(fyne.NewSize(min(520, p.u.win.Canvas().Size().Width-20), content.MinSize().Height+80))
	l.d.Show()
	p.login = l
	return l
}

// finishLogin hands the pasted address to the proxy, which finishes the
// login as its callback would have.
func (p *panel) finishLogin(l *loginUI, provider string) {
	pasted := strings.TrimSpace(l.pasted.Text)
	if pasted == "" {
		l.note.SetText("Paste the address the browser ended on first.")
		return
	}
	lc, ok := p.u.opts.Backend.(admin.LoginCompleter)
	if !ok {
		l.note.SetText("This proxy cannot take a pasted address; run `subpool login " + provider + "` in a terminal.")
		return
	}
	l.finish.Disable()
	l.note.SetText("Finishing the login…")
	p.u.goSafe("finish login", func() {
		ctx, cancel := context.WithTimeout(p.u.ctx, callTimeout)
		defer cancel()
		err := lc.CompleteLogin(ctx, provider, pasted)
		p.u.do(func() {
			l.finish.Enable()
			if err != nil {
				l.note.SetText(fmt.Sprintf("Not finished: %v", err))
				return
			}
			l.pasted.SetText("") // it held a one-time code
			l.d.Hide()
			p.setStatus("Logged in to "+view.LoginTitle(provider)+"; the credential shows up here in a moment.", false)
		})
	})
}
