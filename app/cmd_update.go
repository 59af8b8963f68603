package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress"
	"github.com/subpool/subpool/internal/update"
)

func cmdUpdate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("update", "[--check] [--home DIR]",
		"Asks the release feed ([update] feed in config.toml) whether a newer subpool is out; without --check, installs it. "+
			"Installing replaces a tarball or zip install's binary, only after the release's SHA256SUMS signature verifies against "+
			"the key built into this binary and the archive matches its checksum; a package install is told to use its package manager.\n"+
			"Example: subpool update --check")
	check := f.Bool("check", false, "only say whether a newer release exists")
	homeFlag := f.String("home", "", "home folder (default $SUBPOOL_HOME, else your config folder/subpool)")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	home, err := homePath(*homeFlag)
	if err != nil {
		return fail(stderr, "update", err)
	}
	cfg, err := config.Read(filepath.Join(home, config.FileName))
	if err != nil {
		return fail(stderr, "update", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	current := daemon.Build().Version
	// The feed and the download leave through [network] proxy, as every
	// other outbound call does.
	eg, err := egress.New(cfg.Network.Proxy)
	if err != nil {
		return fail(stderr, "update", err)
	}
	uc := update.Client{HTTP: egress.Client(eg.Transport(), 10*time.Minute)}
	if *check {
		n, _, err := uc.Check(ctx, cfg.Update.Feed, current)
		if err != nil {
			return fail(stderr, "update", err)
		}
		fmt.Fprintln(stdout, n)
		return 0
	}
	in, err := installer()
	if err != nil {
		return fail(stderr, "update", err)
	}
	in.Client = uc
	n, err := in.Update(ctx, cfg.Update.Feed, current)
	if err != nil {
		return fail(stderr, "update", err)
	}
	if !n.Newer {
		fmt.Fprintln(stdout, n)
		return 0
	}
	fmt.Fprintf(stdout, "installed subpool %s at %s (verified); a running proxy or tray keeps the old one until it restarts\n", update.Plain(n.Latest), in.Exe)
	return 0
}

// installer is the Installer for this binary, or why it may not replace
// itself.
func installer() (update.Installer, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return update.Installer{}, fmt.Errorf("cannot find this binary: %v", err)
	}
	if how := update.Managed(exe); how != "" {
		return update.Installer{}, errors.New(exe + ": " + how)
	}
	key, err := update.PublicKey()
	if err != nil {
		return update.Installer{}, err
	}
	return update.Installer{Key: key, Exe: exe, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Headless: !trayBuilt}, nil
}

// updateNotice is the tray's check: nothing, and no request, unless
// [update] check is on; else the feed's answer compared with this build.
// The tray shows a Newer notice once, with its URL as the link.
func updateNotice(ctx context.Context, c update.Client, cfg config.Config) (update.Notice, error) {
	if !cfg.Update.Check {
		return update.Notice{}, nil
	}
	n, _, err := c.Check(ctx, cfg.Update.Feed, daemon.Build().Version)
	return n, err
}
