// fakesubpool stands in for a subpool binary in the update tests: it
// answers `version` as the real one does. The tests build it once and
// write each version into a copy's bytes (the stamp below keeps its
// length), so one build serves every version; "broken" fails to start.
package main

import (
	"fmt"
	"os"
	"strings"
)

var stamp = "fakesubpool-version:dev                             ."

func main() {
	version := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(stamp, "fakesubpool-version:"), "."))
	if version == "broken" {
		fmt.Fprintln(os.Stderr, "fakesubpool: cannot start")
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Printf("subpool %s\ncommit 0000000\nbuilt 2026-12-08T00:00:00Z\n", version)
	}
}
