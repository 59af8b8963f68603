//go:build !cgo

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Without cgo there is no Fyne (GLFW is C), so this build is the headless
// one: every verb but the tray (issue 17). `make build-headless` makes it.

const trayBuilt = false

var errNoTray = errors.New("this build has no tray (built without cgo)")

func trayUnavailable() error { return errNoTray }

// runTrayOn is never reached past trayUnavailable; it answers the same
// way should a caller forget to ask.
func runTrayOn(_ context.Context, _ trayTarget, stderr io.Writer) int {
	fmt.Fprintf(stderr, "subpool: %v; run `subpool serve` for the headless proxy\n", errNoTray)
	return 1
}
