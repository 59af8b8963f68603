package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/toolsetup"
)

func cmdSetup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	tools := strings.Join(toolsetup.Tools(), "|")
	f := newFlags("setup", tools+" [--dry-run] [--undo] [--model M] [--home DIR]",
		"Writes subpool's address and the tool's own client key into the tool's settings file, keeping every other setting;\n"+
			"the file is backed up first (FILE.subpool-backup-TIME). --dry-run shows the change and writes no file; --undo gives the\n"+
			"file back byte for byte (or removes it when setup created it). A file setup cannot parse is left alone.\n"+
			"Example: subpool setup codex --dry-run")
	home := f.String("home", "", "home folder")
	dry := f.Bool("dry-run", false, "show the change, write nothing")
	undo := f.Bool("undo", false, "restore the file as it was before setup")
	model := f.String("model", "", "the model Continue or Cline is set to use (default gpt-5)")
	if code, done := f.parseArgs(args, 1, "name one tool: "+strings.ReplaceAll(tools, "|", ", "), stdout, stderr); done {
		return code
	}
	tool := f.pos[0]
	h, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "setup", err)
	}
	if *undo {
		done, err := toolsetup.Undo(tool, h)
		for _, line := range done {
			fmt.Fprintln(stdout, line)
		}
		if err != nil {
			return fail(stderr, "setup", err)
		}
		return 0
	}
	if !toolsetup.Known(tool) {
		fmt.Fprintf(stderr, "subpool setup: unknown tool %q; use %s\n", tool, strings.ReplaceAll(tools, "|", ", "))
		return 2
	}
	out, err := setUpTool(h, cfg, tool, *model, *dry)
	fmt.Fprint(stdout, out)
	if err != nil {
		return fail(stderr, "setup", err)
	}
	return 0
}

// setUpTool is `subpool setup TOOL` for the verb and the tray: with dry
// it returns the change as a diff and writes nothing; else it writes the
// tool's files (a backup first) and says what it did, a line each.
func setUpTool(home string, cfg config.Config, tool, model string, dry bool) (string, error) {
	env, err := toolsetup.OS()
	if err != nil {
		return "", err
	}
	key, err := toolKey(home, tool)
	if err != nil {
		return "", err
	}
	plan, err := toolsetup.Prepare(tool, env, toolsetup.Target{Base: "http://" + daemon.LiveAddr(home, cfg), Key: key, Model: model})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch {
	case dry:
		b.WriteString(plan.Diff())
		b.WriteString("(dry run: nothing was written)\n")
		return b.String(), nil
	case plan.Unchanged():
		return tool + " is already set up for subpool\n", nil
	}
	backups, err := toolsetup.Apply(plan, home, time.Now())
	for _, bk := range backups {
		fmt.Fprintf(&b, "backed up %s\n", bk)
	}
	if err != nil {
		return b.String(), err
	}
	for _, c := range plan.Changes {
		fmt.Fprintf(&b, "wrote %s\n", c.Path)
	}
	fmt.Fprintf(&b, "%s now talks to subpool with its own client key; `subpool setup %s --undo` puts the file back\n", tool, tool)
	return b.String(), nil
}
