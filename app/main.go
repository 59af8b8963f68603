// Package app is subpool's command line: it parses flags, builds the parts
// (config, keychain, pool, proxy, admin API, tray) and starts them.
package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Main runs subpool with os.Args and exits.
func Main(args []string) {
	os.Exit(run(args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type command struct {
	name, args, summary string
	run                 func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands is the whole command line, in the order help lists it.
var commands []command

func init() {
	commands = []command{
		{"serve", "[--listen ADDR] [--home DIR]", "run the proxy and admin API in the foreground (what the login service runs)", cmdServe},
		{"demo", "[--listen ADDR] [--home DIR] [--gui]", "the proxy on simulated upstreams with scripted failures; touches nothing of yours", cmdDemo},
		{"add-key", "PROVIDER --label L", "store an API key in the keychain (asked for on a terminal, else read from stdin)", cmdAddKey},
		{"login", "anthropic|openai|google [--label L] [--no-browser]", "log in to a Claude, ChatGPT or Google (Gemini CLI) subscription in the browser", cmdLogin},
		{"import", "claude-code|codex|gemini-cli [--label L]", "import the login Claude Code, Codex CLI or Gemini CLI holds, kept in step with it", cmdImport},
		{"list", "[--json]", "every credential: state, cooldown left, utilization", cmdList},
		{"remove", "ID|LABEL", "remove a credential and its secret", cmdRemove},
		{"pause", "ID|LABEL", "stop using a credential until resumed", cmdPause},
		{"resume", "ID|LABEL", "use a paused credential again", cmdResume},
		{"reset", "ID|LABEL", "clear a credential's cooldowns and payment parks now", cmdReset},
		{"reserve", "ID|LABEL PERCENT|default", "keep a share of a subscription's window for your own use", cmdReserve},
		{"tools", "ID|LABEL all|own", "let every tool use a subscription login, or only its own (Claude Code, Gemini CLI)", cmdTools},
		{"env", "claude-code|codex|gemini-cli|opencode|shell", "print what to paste so a tool talks to the proxy", cmdEnv},
		{"setup", "claude-code|codex|gemini-cli|opencode|continue|cline [--dry-run] [--undo]", "write the tool's own settings file so it talks to the proxy (a backup first)", cmdSetup},
		{"client", "add NAME|list|revoke NAME", "one client key per tool: add (limits optional), list, revoke", cmdClient},
		{"reload", "", "have the running proxy read config.toml again (edits are also noticed by themselves)", cmdReload},
		{"events", "[--json]", "print the proxy's decisions as they happen (alias: watch)", cmdEvents},
		{"usage", "[--since 24h|7d|DATE] [--by day|hour|credential|model|client|app|provider] [--json|--csv]", "tokens, refusals, waiting and estimated cost from the request history", cmdUsage},
		{"history", "[-n 50] [--class C] [--json]", "the last requests, one line each", cmdHistory},
		{"version", "[--json]", "version, commit and build date", cmdVersion},
		{"update", "[--check]", "whether a newer release exists; without --check, install it (tarball and zip installs)", cmdUpdate},
		{"classify", "--provider P --status N [--header 'K: V']... [--body FILE|-]", "say why an upstream refused: class, scope, retry time", func(a []string, in io.Reader, out, errw io.Writer) int {
			return cmdClassify(a, in, out, errw)
		}},
		{"service", "install|uninstall|start|stop|status", "the per-user login service running `subpool serve`", func(a []string, _ io.Reader, out, errw io.Writer) int {
			return cmdService(a, out, errw)
		}},
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// No verb, or flags only (subpool --home DIR): the tray on that home.
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpArg(args[0]) && args[0] != "--version" {
		return cmdTray(args, stdin, stdout, stderr)
	}
	name := args[0]
	switch name {
	case "watch":
		name = "events"
	case "--version":
		name = "version"
	}
	// The table first, so a verb added to it wins over the fallbacks below.
	for _, c := range commands {
		if c.name == name {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	switch name {
	case "-h", "--help", "help":
		if len(args) > 1 && !isHelpArg(args[1]) {
			// help VERB is VERB --help.
			return run([]string{args[1], "--help"}, stdin, stdout, stderr)
		}
		usage(stdout)
		return 0
	case "tray":
		return cmdTray(args[1:], stdin, stdout, stderr)
	}
	names := []string{"help", "version", "watch", "tray"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "subpool: unknown command %q;%s run `subpool --help` for the list\n", name, didYouMean(name, names))
	return 2
}

func isHelpArg(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

func usage(w io.Writer) {
	fmt.Fprint(w, `subpool pools your AI subscriptions and API keys behind one local endpoint.

Usage:
  subpool [--home DIR]         the tray app (starts the proxy in-process if none runs)
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  subpool %-20s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command takes --home DIR (default $SUBPOOL_HOME, else your config folder/subpool)
and answers --help (or: subpool help COMMAND). A credential is named by its ID or its label.

Routes on the proxy (default http://127.0.0.1:8787):
  POST /v1/messages, /v1/messages/count_tokens           -> anthropic pool
  /v1/responses, /v1/chat/completions, /v1/models,
  /v1/embeddings                                         -> openai pool
  /v1beta/models/MODEL:generateContent|:streamGenerateContent|:countTokens,
  GET /v1beta/models, /v1internal:METHOD (Code Assist)   -> google pool
  /NAME/v1/..., /NAME/v1beta/...                         -> provider NAME (also /anthropic, /openai, /google)
`)
}

// flagSet is a FlagSet that reports errors in one line (returned by parse)
// instead of printing usage.
type flagSet struct {
	*flag.FlagSet
	cmd, args, summary string
	pos                []string // positional arguments, wherever they stood
}

func newFlags(cmd, args, summary string) *flagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flagSet{FlagSet: fs, cmd: cmd, args: args, summary: summary}
}

// parse returns (exit code, done). Help prints usage and exits 0; a bad
// flag prints one line and exits 2.
func (f *flagSet) parse(args []string, stdout, stderr io.Writer) (int, bool) {
	// Let flags follow positional arguments (subpool add-key anthropic --label x).
	var pos []string
	rest := args
	for {
		// A negative number is a value (reserve ID -5), never a flag; the
		// verb says what is wrong with it.
		for len(rest) > 0 && isNegativeNumber(rest[0]) {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
		if err := f.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(stdout)
				return 0, true
			}
			fmt.Fprintf(stderr, "subpool %s: %v (see `subpool %s --help`)\n", f.cmd, err, f.cmd)
			return 2, true
		}
		if f.NArg() == 0 {
			break
		}
		pos = append(pos, f.Arg(0))
		rest = f.Args()[1:]
	}
	f.pos = pos
	return 0, false
}

func isNegativeNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	return err == nil && strings.HasPrefix(s, "-")
}

// parseArgs is parse for a verb that takes n positional arguments. Any
// other number prints one line and exits 2: want, what the verb takes, or
// for a verb that takes none, the first argument it did not expect.
func (f *flagSet) parseArgs(args []string, n int, want string, stdout, stderr io.Writer) (int, bool) {
	if code, done := f.parse(args, stdout, stderr); done {
		return code, true
	}
	switch {
	case len(f.pos) == n:
		return 0, false
	case n == 0:
		fmt.Fprintf(stderr, "subpool %s: unexpected argument %q (see `subpool %s --help`)\n", f.cmd, f.pos[0], f.cmd)
	default:
		fmt.Fprintf(stderr, "subpool %s: %s\n", f.cmd, want)
	}
	return 2, true
}

// help is the page every verb's --help prints, in one layout: the usage
// line, the summary, the options, then an example (a summary's
// "Example:" lines, else the verb's entry in verbExamples).
func (f *flagSet) help(w io.Writer) {
	var summary, examples []string
	for _, line := range strings.Split(f.summary, "\n") {
		if ex, ok := strings.CutPrefix(line, "Example: "); ok {
			examples = append(examples, ex)
			continue
		}
		summary = append(summary, line)
	}
	if len(examples) == 0 && verbExamples[f.cmd] != "" {
		examples = []string{verbExamples[f.cmd]}
	}
	fmt.Fprintf(w, "Usage: subpool %s %s\n\n%s\n", f.cmd, f.args, strings.Join(summary, "\n"))
	var opts strings.Builder
	f.VisitAll(func(fl *flag.Flag) {
		dash := "--"
		if len(fl.Name) == 1 {
			dash = "-"
		}
		fmt.Fprintf(&opts, "  %-12s %s\n", dash+fl.Name, fl.Usage)
	})
	if opts.Len() > 0 {
		fmt.Fprintf(w, "\nOptions:\n%s", opts.String())
	}
	if len(examples) > 0 {
		fmt.Fprintf(w, "\nExample:\n  %s\n", strings.Join(examples, "\n  "))
	}
}

// verbExamples is the example of a verb whose summary gives none.
var verbExamples = map[string]string{
	"serve":         "subpool serve --listen 127.0.0.1:8787",
	"login":         "subpool login anthropic --label work-max",
	"import":        "subpool import claude-code",
	"list":          "subpool list --json",
	"env":           "eval \"$(subpool env shell)\"",
	"events":        "subpool events --json",
	"usage":         "subpool usage --since 7d --by credential",
	"history":       "subpool history -n 20 --class rate_limit",
	"reload":        "subpool reload",
	"tray":          "subpool --home ~/subpool-test",
	"client add":    "subpool client add aider --providers anthropic",
	"client list":   "subpool client list",
	"client revoke": "subpool client revoke aider",
}

// fail prints one line and returns exit code 1.
func fail(stderr io.Writer, cmd string, err error) int {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	fmt.Fprintf(stderr, "subpool %s: %s\n", cmd, msg)
	return 1
}
