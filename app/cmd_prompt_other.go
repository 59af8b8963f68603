//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package app

import (
	"errors"
	"os"
)

// On other systems (Windows) add-key reads the key from stdin, piped or
// typed: no terminal is detected, so nothing is asked.
func isTerminal(*os.File) bool { return false }

func readHidden(*os.File, func()) (string, error) { return "", errors.New("no terminal support") }
