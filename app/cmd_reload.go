package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
)

func cmdReload(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("reload", "[--home DIR]", "Has the running proxy read config.toml again: what can change live applies now, the rest is named. Edits are noticed without it; this is for scripts.")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	h, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "reload", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := runningClient(ctx, h, cfg)
	if err != nil {
		return fail(stderr, "reload", err)
	}
	if c == nil {
		fmt.Fprintln(stdout, "no proxy is running; config.toml is read when one starts")
		return 0
	}
	res, err := c.Reload(ctx)
	switch {
	case err != nil:
		return fail(stderr, "reload", err)
	case res.Error != "":
		return fail(stderr, "reload", fmt.Errorf("edit refused, the running config stays: %s", res.Error))
	case len(res.Live)+len(res.Restart) == 0:
		fmt.Fprintln(stdout, "config.toml: nothing changed")
	default:
		fmt.Fprintln(stdout, "config.toml: "+daemon.DescribeReload(config.Reload{Live: res.Live, Restart: res.Restart}))
	}
	return 0
}
