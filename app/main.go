// Package app is subpool's command line: it parses flags, builds the parts
// (config, keychain, pool, proxy, admin API, tray) and starts them.
package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
		{"demo", "[--listen ADDR] [--gui]", "the proxy on simulated upstreams with scripted failures; touches nothing of yours", cmdDemo},
		{"add-key", "PROVIDER --label L", "store an API key read from stdin in the keychain", cmdAddKey},
		{"login", "anthropic|openai|google [--label L] [--no-browser]", "log in to a Claude, ChatGPT or Google (Gemini CLI) subscription in the browser", cmdLogin},
		{"import", "claude-code|codex|gemini-cli [--label L]", "import the login Claude Code, Codex CLI or Gemini CLI holds, kept in step with it", cmdImport},
		{"list", "[--json]", "every credential: state, cooldown left, utilization", cmdList},
		{"remove", "ID", "remove a credential and its secret", cmdRemove},
		{"pause", "ID", "stop using a credential until resumed", cmdPause},
		{"resume", "ID", "use a paused credential again", cmdResume},
		{"reset", "ID", "clear a credential's cooldowns and payment parks now", cmdReset},
		{"reserve", "ID PERCENT|default", "keep a share of a subscription's window for your own use", cmdReserve},
		{"tools", "ID all|own", "let every tool use a subscription login, or only its own (Claude Code, Gemini CLI)", cmdTools},
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
	if len(args) == 0 {
		return cmdTray(args, stdin, stdout, stderr)
	}
	name := args[0]
	switch name {
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	case "--version":
		name = "version"
	case "watch":
		name = "events"
	case "tray":
		return cmdTray(args[1:], stdin, stdout, stderr)
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "subpool: unknown command %q; run `subpool --help` for the list\n", name)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `subpool pools your AI subscriptions and API keys behind one local endpoint.

Usage:
  subpool                      the tray app (starts the proxy in-process if none runs)
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  subpool %-20s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command takes --home DIR (default $SUBPOOL_HOME, else your config folder/subpool)
and answers --help.

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

func (f *flagSet) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: subpool %s %s\n\n%s\n", f.cmd, f.args, f.summary)
	var opts strings.Builder
	f.VisitAll(func(fl *flag.Flag) {
		fmt.Fprintf(&opts, "  --%-10s %s\n", fl.Name, fl.Usage)
	})
	if opts.Len() > 0 {
		fmt.Fprintf(w, "\nOptions:\n%s", opts.String())
	}
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
