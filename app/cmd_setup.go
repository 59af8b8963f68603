package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/subpool/subpool/daemon"
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
	env, err := toolsetup.OS()
	if err != nil {
		return fail(stderr, "setup", err)
	}
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
	key, err := toolKey(h, tool)
	if err != nil {
		return fail(stderr, "setup", err)
	}
	plan, err := toolsetup.Prepare(tool, env, toolsetup.Target{Base: "http://" + daemon.LiveAddr(h, cfg), Key: key, Model: *model})
	if err != nil {
		return fail(stderr, "setup", err)
	}
	if *dry {
		fmt.Fprint(stdout, plan.Diff())
		fmt.Fprintln(stdout, "(dry run: nothing was written)")
		return 0
	}
	if plan.Unchanged() {
		fmt.Fprintf(stdout, "%s is already set up for subpool\n", tool)
		return 0
	}
	backups, err := toolsetup.Apply(plan, h, time.Now())
	for _, b := range backups {
		fmt.Fprintf(stdout, "backed up %s\n", b)
	}
	if err != nil {
		return fail(stderr, "setup", err)
	}
	for _, c := range plan.Changes {
		fmt.Fprintf(stdout, "wrote %s\n", c.Path)
	}
	fmt.Fprintf(stdout, "%s now talks to subpool with its own client key; `subpool setup %s --undo` puts the file back\n", tool, tool)
	return 0
}
