package app

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// The reserve lives in the pool's state file, beside pause: like pause it
// is a person's choice about one credential that the pool acts on, it is
// no secret (so not the keychain's), and the running proxy writes that
// file whenever the pool changes, so a value written anywhere else would
// be overwritten or ignored until a restart.

func cmdReserve(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("reserve", "ID|LABEL PERCENT|default [--home DIR]",
		"Keeps PERCENT of a subscription's binding window (the 5h or weekly one that limits it) for your own use in claude.ai or ChatGPT: subpool stops sending to it at 100 - PERCENT % until that window resets. `default` follows [usage] reserve again.\nExample: subpool reserve a1b2c3 15")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 2, "name one credential ID and a percent, e.g. `subpool reserve ID 15` (see `subpool list`)", stdout, stderr); done {
		return code
	}
	id, arg := f.pos[0], strings.TrimSuffix(strings.TrimSpace(f.pos[1]), "%")
	percent := -1
	if arg != "default" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 || n > 99 {
			fmt.Fprintf(stderr, "subpool reserve: %q is not a percent from 0 to 99 (or `default`)\n", f.pos[1])
			return 2
		}
		percent = n
	}
	var kind string
	ref := id
	err := withBackend(*home, func(ctx context.Context, b admin.Backend) error {
		c, err := findCredential(ctx, b, ref)
		if err != nil {
			return err
		}
		kind, id = c.Kind, c.ID
		return b.Reserve(ctx, id, percent)
	})
	if err != nil {
		return fail(stderr, "reserve", cleanAPIErr(notFoundErr(err, ref)))
	}
	switch {
	case percent < 0:
		fmt.Fprintf(stdout, "%s follows [usage] reserve again\n", id)
	case kind != api.KindOAuth:
		fmt.Fprintf(stdout, "reserve of %s set to %d%%; it is an API key, and a reserve only ever holds subscriptions back\n", id, percent)
	default:
		fmt.Fprintf(stdout, "reserve of %s set to %d%%\n", id, percent)
	}
	return 0
}
