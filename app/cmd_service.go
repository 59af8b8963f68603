package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/service"
)

const serviceUsage = `Usage: subpool service install|uninstall|start|stop|status [--home DIR] [--listen ADDR]

Runs ` + "`subpool serve`" + ` at login as a per-user service: a systemd user unit on
Linux, a LaunchAgent on macOS. Windows has no per-user services: there the
login item opens the tray, which runs the proxy in-process.

  install    write and register it (again: rewrite it); it starts at next login
  uninstall  stop it and remove it
  start      start it now
  stop       stop it until the next login
  status     installed or not, running or not, its address, where it logs

  --home DIR     home of the service's proxy (default $SUBPOOL_HOME, else <user config dir>/subpool)
  --listen ADDR  address it listens on (default: listen in config.toml, else 127.0.0.1:8787)

Nothing here needs root. docs/service.md lists the files and how to remove them by hand.

Example:
  subpool service install && subpool service start
`

// serviceOptions is nil in production, so the machine's own service manager
// is used; tests put a fake service system here.
var serviceOptions []service.Option

// cmdService runs `subpool service ACTION [flags]`; args follow "service".
func cmdService(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("subpool service", flag.ContinueOnError)
	fl.SetOutput(io.Discard) // errors are reported below, in one line
	homeFlag := fl.String("home", "", "")
	listenFlag := fl.String("listen", "", "")

	// Flags may come before or after the action.
	var words []string
	for rest := args; ; {
		if err := fl.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, serviceUsage)
				return 0
			}
			fmt.Fprintf(stderr, "subpool service: %v (see `subpool service --help`)\n", err)
			return 2
		}
		if fl.NArg() == 0 {
			break
		}
		words = append(words, fl.Arg(0))
		rest = fl.Args()[1:]
	}
	if len(words) == 0 {
		fmt.Fprintln(stderr, "subpool service: name an action: install, uninstall, start, stop or status")
		return 2
	}
	action := words[0]
	switch action {
	case "help":
		fmt.Fprint(stdout, serviceUsage)
		return 0
	case "install", "uninstall", "start", "stop", "status":
	default:
		fmt.Fprintf(stderr, "subpool service: unknown action %q: use install, uninstall, start, stop or status\n", action)
		return 2
	}
	if len(words) > 1 {
		fmt.Fprintf(stderr, "subpool service %s: unexpected argument %q\n", action, words[1])
		return 2
	}
	if *listenFlag != "" {
		if _, _, err := net.SplitHostPort(*listenFlag); err != nil {
			fmt.Fprintf(stderr, "subpool service %s: --listen %q: want HOST:PORT, e.g. 127.0.0.1:8787\n", action, *listenFlag)
			return 2
		}
	}

	fail := func(err error) int {
		fmt.Fprintf(stderr, "subpool service %s: %s\n", action, strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}

	cfg, err := serviceConfig(*homeFlag, *listenFlag)
	if err != nil {
		return fail(err)
	}
	m, err := service.NewManager(cfg, serviceOptions...)
	if err != nil {
		return fail(err)
	}

	if err := serviceAction(m, action, stdout); err != nil {
		return fail(err)
	}
	return 0
}

// serviceConfig resolves what the service runs. Both --home and --listen end
// up explicit on the service's command line: a service manager starts it
// without the shell's $SUBPOOL_HOME or working directory.
func serviceConfig(homeFlag, listenFlag string) (service.Config, error) {
	explicit := homeFlag != "" || os.Getenv("SUBPOOL_HOME") != ""
	// Only reads: a refused install must leave no trace.
	home, err := homePath(homeFlag)
	if err != nil {
		return service.Config{}, err
	}
	conf, err := config.Read(filepath.Join(home, config.FileName))
	if err != nil {
		return service.Config{}, err
	}
	listen := listenFlag
	if listen == "" {
		listen = conf.Listen
	}
	cfg := service.Config{Home: home, Listen: listen}
	if explicit {
		// The tray's login item (Windows) gets no shell environment either.
		// Bare `subpool` takes no flags; `subpool tray` does.
		cfg.TrayArgs = []string{"tray", "--home", home}
	}
	return cfg, nil
}

// serviceAction carries out one action on the login service and says
// what it did.
func serviceAction(m *service.Manager, action string, stdout io.Writer) error {
	switch action {
	case "install":
		if err := m.Install(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "subpool service: installed the %s; it starts at your next login, or now with `subpool service start`\n", m.Where())
	case "uninstall":
		err := m.Uninstall()
		if errors.Is(err, service.ErrNotInstalled) {
			fmt.Fprintln(stdout, "subpool service: not installed; nothing to remove")
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "subpool service: removed the %s\n", m.Where())
	case "start":
		if err := m.Start(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "subpool service: running; logs: %s\n", m.LogLocation())
	case "stop":
		if err := m.Stop(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "subpool service: stopped; it starts again at your next login (`subpool service uninstall` removes it)")
	case "status":
		r, err := m.Status()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, r.String())
	}
	return nil
}
