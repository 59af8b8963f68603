package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/ui/view"
)

// The panel's actions. Each runs on the UI goroutine, says what it started
// in the status line, and hands the network call to UI.async. The row's new
// state arrives on the event stream, not from the call's answer.

// call runs one per-credential backend method.
func (p *panel) call(verb string, row view.Row, fn func(ctx context.Context, id string) error) {
	id, label := row.ID, row.Label
	p.setStatus(verb+" "+label+"…", false)
	p.u.async(verb, func(ctx context.Context) (func(), error) {
		if err := fn(ctx, id); err != nil {
			return nil, fmt.Errorf("%s %s failed: %w", verb, label, err)
		}
		return func() { p.setStatus(verb+" "+label+": done", false) }, nil
	})
}

func (p *panel) pauseOrResume(row view.Row) {
	if row.Paused {
		p.call("Resume", row, p.u.opts.Backend.Resume)
		return
	}
	p.call("Pause", row, p.u.opts.Backend.Pause)
}

func (p *panel) reset(row view.Row) { p.call("Reset", row, p.u.opts.Backend.Reset) }

func (p *panel) remove(row view.Row) {
	msg := "subpool forgets it and deletes its secret from the keychain."
	if strings.Contains(row.Detail, "imported") {
		msg += " The tool it was imported from keeps its own login."
	}
	dialog.ShowConfirm("Remove "+row.Label+"?", msg, func(ok bool) {
		if ok {
			p.call("Remove", row, p.u.opts.Backend.RemoveCredential)
		}
	}, p.u.win)
}

// relogin fixes a refused credential: a new login for a subscription, a
// new key for an API key.
func (p *panel) relogin(row view.Row) {
	if row.Kind == api.KindAPIKey {
		p.showKeyForm(row.Provider, row.Label)
		return
	}
	p.startLogin(row.Provider, row.Label)
}

func (p *panel) startLogin(provider, label string) {
	name := view.LoginTitle(provider)
	p.setStatus("Starting the "+name+" login…", false)
	p.u.async("login", func(ctx context.Context) (func(), error) {
		ls, err := p.u.opts.Backend.StartLogin(ctx, provider, label)
		if err != nil {
			return nil, fmt.Errorf("could not start the %s login: %w", name, err)
		}
		return func() {
			opened := false
			if u, err := url.Parse(ls.URL); err == nil {
				opened = p.u.app.OpenURL(u) == nil
			}
			p.showLogin(provider, ls.URL, opened)
			p.setStatus("Finish the "+name+" login in your browser; the credential shows up here when it is done.", false)
		}, nil
	})
}

func (p *panel) importFrom(source, name string) {
	p.setStatus("Importing from "+name+"…", false)
	p.u.async("import", func(ctx context.Context) (func(), error) {
		if err := p.u.opts.Import(ctx, source); err != nil {
			return nil, fmt.Errorf("could not import from %s: %w", name, err)
		}
		return func() { p.setStatus("Imported from "+name+"; "+name+" keeps working as before.", false) }, nil
	})
}

// showAbout shows this build's version, commit and date in the panel.
func (u *UI) showAbout() {
	u.win.Show()
	dialog.ShowInformation("About subpool", u.opts.About(), u.win)
}

// setUpTool shows what `subpool setup TOOL` would change and, when the
// person says so, writes it (a backup first).
func (p *panel) setUpTool(tool, name string) {
	p.setStatus("Reading "+name+"'s settings…", false)
	p.u.async("set up "+name, func(context.Context) (func(), error) {
		diff, err := p.u.opts.SetUpTool(tool, true)
		if err != nil {
			return nil, fmt.Errorf("could not set %s up: %w", name, err)
		}
		return func() { p.confirmSetUp(tool, name, diff) }, nil
	})
}

func (p *panel) confirmSetUp(tool, name, diff string) {
	text := widget.NewLabel(diff)
	text.TextStyle = fyne.TextStyle{Monospace: true}
	box := container.NewScroll(text)
	box.SetMinSize(fyne.NewSize(480, 240))
	p.setStatus("", false)
	dialog.ShowCustomConfirm("Set "+name+" up for subpool?", "Write", "Cancel", box, func(ok bool) {
		if !ok {
			return
		}
		p.u.async("set up "+name, func(context.Context) (func(), error) {
			out, err := p.u.opts.SetUpTool(tool, false)
			if err != nil {
				return nil, fmt.Errorf("could not set %s up: %w", name, err)
			}
			last := strings.TrimSpace(out)
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			return func() { p.setStatus(last, false) }, nil
		})
	}, p.u.win)
}

func (p *panel) showAddMenu() {
	m := fyne.NewMenu("",
		fyne.NewMenuItem("Log in with Claude…", func() { p.startLogin("anthropic", "") }),
		fyne.NewMenuItem("Log in with ChatGPT…", func() { p.startLogin("openai", "") }),
		fyne.NewMenuItem("Log in with Google (Gemini CLI)…", func() { p.startLogin("google", "") }),
		fyne.NewMenuItem("Paste an API key…", func() { p.showKeyForm("", "") }),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Import from Claude Code", func() { p.importFrom("claude-code", "Claude Code") }),
		fyne.NewMenuItem("Import from Codex CLI", func() { p.importFrom("codex", "Codex CLI") }),
		fyne.NewMenuItem("Import from Gemini CLI", func() { p.importFrom("gemini-cli", "Gemini CLI") }),
	)
	if p.u.opts.SetUpTool != nil {
		setUp := fyne.NewMenuItem("Set up a tool", nil)
		setUp.ChildMenu = fyne.NewMenu("")
		for _, t := range view.SetUpTools {
			setUp.ChildMenu.Items = append(setUp.ChildMenu.Items, fyne.NewMenuItem(t.Name+"…", func() { p.setUpTool(t.Tool, t.Name) }))
		}
		m.Items = append(m.Items, fyne.NewMenuItemSeparator(), setUp)
	}
	widget.ShowPopUpMenuAtRelativePosition(m, p.u.win.Canvas(), fyne.NewPos(0, p.add.Size().Height), p.add)
}

// showKeyForm asks for an API key. provider and label preset it when a
// refused key is being replaced.
func (p *panel) showKeyForm(provider, label string) {
	providers := p.u.last.Providers
	if provider == "" && len(providers) > 0 {
		provider = providers[0]
	}
	sel := widget.NewSelect(providers, nil)
	sel.SetSelected(provider)
	name := widget.NewEntry()
	name.SetPlaceHolder("work key")
	name.SetText(label)
	name.Validator = func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("give it a name you will recognise")
		}
		return nil
	}
	key := widget.NewPasswordEntry()
	key.Validator = func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("paste the key")
		}
		return nil
	}
	items := []*widget.FormItem{
		widget.NewFormItem("Provider", sel),
		widget.NewFormItem("Label", name),
		widget.NewFormItem("Key", key),
	}
	dialog.ShowForm("Add an API key", "Add", "Cancel", items, func(ok bool) {
		secret := strings.TrimSpace(key.Text)
		key.SetText("") // the key lives in the keychain, not in a widget
		if !ok {
			return
		}
		prov, lab := sel.Selected, strings.TrimSpace(name.Text)
		p.setStatus("Adding "+lab+"…", false)
		p.u.async("add key", func(ctx context.Context) (func(), error) {
			req := api.AddCredential{Provider: prov, Label: lab, Kind: api.KindAPIKey, Secret: map[string]string{"key": secret}}
			if _, err := p.u.opts.Backend.AddCredential(ctx, req); err != nil {
				return nil, fmt.Errorf("could not add %s: %w", lab, err)
			}
			return func() { p.setStatus("Added "+lab+".", false) }, nil
		})
	}, p.u.win)
}

// showRowMenu offers a row's rarer actions: the reserve of a subscription
// and removal, which asks again before it acts.
func (p *panel) showRowMenu(r *rowUI) {
	row := r.row
	var items []*fyne.MenuItem
	if row.Kind == api.KindOAuth {
		it := fyne.NewMenuItem("Reserve…", func() { p.showReserveForm(row) })
		it.Disabled = !row.CanReserve
		items = append(items, it)
	}
	rm := fyne.NewMenuItem("Remove…", func() { p.remove(row) })
	rm.Disabled = !row.CanRemove
	items = append(items, rm)
	widget.ShowPopUpMenuAtRelativePosition(fyne.NewMenu("", items...), p.u.win.Canvas(),
		fyne.NewPos(0, r.more.Size().Height), r.more)
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
