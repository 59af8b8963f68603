package view

// Action is what a menu item does when picked.
type Action int

const (
	ActNone         Action = iota // an information line
	ActOpenPanel                  // show the panel
	ActCopySetup                  // copy the setup text for tool Arg
	ActPauseAll                   // pause View.PauseIDs
	ActResumeAll                  // resume View.ResumeIDs
	ActStartAtLogin               // toggle start at login
	ActAbout                      // show the build's version
	ActQuit
)

// MenuItem is one line of the tray menu, as data: the UI turns it into the
// toolkit's menu, and tests read it without a toolkit.
type MenuItem struct {
	Label     string
	Action    Action
	Arg       string
	Disabled  bool
	Checked   bool
	Separator bool
	Children  []MenuItem
}

// SetupTools are the tools "Copy setup" offers: the argument for the setup
// text (as in `subpool env TOOL`) and the name a person knows.
var SetupTools = []struct{ Tool, Name string }{
	{"claude-code", "Claude Code"},
	{"codex", "Codex CLI"},
	{"gemini-cli", "Gemini CLI"},
	{"opencode", "opencode"},
}

// MenuOptions are the menu parts that depend on what the app can do.
type MenuOptions struct {
	Setup bool // offer Copy setup
	// StartAtLogin is the current setting; nil hides the item.
	StartAtLogin *bool
	About        bool // offer About subpool
	// Window: the menu is the panel window's own (no tray host), over the
	// panel that shows every credential, so it leaves their lines out.
	// They count down every second, and the window's menu bar is built
	// anew on every change (issue 42: sixty menu bars a minute, held in
	// Fyne's caches for a minute each).
	Window bool
}

// SetUpTools are the tools "Set up a tool" writes the settings of (as in
// `subpool setup TOOL`): the ones Copy setup knows, and two editors.
var SetUpTools = append(SetupTools[:len(SetupTools):len(SetupTools)], []struct{ Tool, Name string }{
	{"continue", "Continue"},
	{"cline", "Cline"},
}...)

// Menu lays out the tray menu for v.
func (v View) Menu(o MenuOptions) []MenuItem {
	sep := MenuItem{Separator: true}
	head := "Proxy: " + v.Address
	switch v.Conn {
	case Connecting:
		head += " (connecting)"
	case Offline:
		head += " (offline)"
	case Unauthorized:
		head += " (token refused)"
	}
	items := []MenuItem{{Label: head, Disabled: true}, sep}
	n := 0
	for _, s := range v.Sections {
		for _, r := range s.Rows {
			if !o.Window {
				items = append(items, MenuItem{Label: r.Label + " — " + r.Menu, Action: ActOpenPanel})
			}
			n++
		}
	}
	if n == 0 && v.Conn == Online && !o.Window {
		items = append(items, MenuItem{Label: "No credentials yet: add one…", Action: ActOpenPanel})
	}
	if n > 0 || v.Conn == Online {
		items = append(items, sep)
	}
	items = append(items, MenuItem{Label: "Open panel…", Action: ActOpenPanel})
	if o.Setup {
		setup := MenuItem{Label: "Copy setup for"}
		for _, t := range SetupTools {
			setup.Children = append(setup.Children, MenuItem{Label: t.Name, Action: ActCopySetup, Arg: t.Tool})
		}
		items = append(items, setup)
	}
	items = append(items,
		MenuItem{Label: "Pause all", Action: ActPauseAll, Disabled: v.ReadOnly || len(v.PauseIDs) == 0},
		MenuItem{Label: "Resume all", Action: ActResumeAll, Disabled: v.ReadOnly || len(v.ResumeIDs) == 0},
		sep)
	if o.StartAtLogin != nil {
		items = append(items, MenuItem{Label: "Start at login", Action: ActStartAtLogin, Checked: *o.StartAtLogin})
	}
	if o.About {
		items = append(items, MenuItem{Label: "About subpool…", Action: ActAbout})
	}
	items = append(items, MenuItem{Label: "Quit", Action: ActQuit})
	return items
}
