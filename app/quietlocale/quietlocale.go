// Package quietlocale keeps Fyne from logging "Error parsing user locale C"
// on every command under LANG=C.UTF-8, the default of servers, containers
// and CI. Fyne reads the locale in its lang package's init, before any of
// our code runs; its locale library turns "C.UTF-8" into the tag "C",
// which does not parse. Setting LANGUAGE (only consulted for message
// translations) to "en" gives it a valid tag and changes nothing else.
//
// It works because of Go's initialization order: this package imports only
// os and strings, so it is ready as soon as those are, and it sorts before
// golang.org/x/text, which fyne's lang package needs first. It must stay
// free of other imports.
package quietlocale

import (
	"os"
	"strings"
)

func init() {
	if os.Getenv("LANGUAGE") != "" {
		return
	}
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := os.Getenv(k)
		if v == "" {
			continue
		}
		// Exactly "C" or "POSIX" is understood; "C.UTF-8" is not.
		if base, _, found := strings.Cut(v, "."); found && (base == "C" || base == "POSIX") {
			os.Setenv("LANGUAGE", "en")
		}
		return
	}
}
