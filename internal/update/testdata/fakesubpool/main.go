// fakesubpool stands in for a subpool binary in the update tests: it
// answers `version` as the real one does, with the version it was built
// with, and a build with version "broken" fails to start.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	if version == "broken" {
		fmt.Fprintln(os.Stderr, "fakesubpool: cannot start")
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Printf("subpool %s\ncommit 0000000\nbuilt 2026-12-08T00:00:00Z\n", version)
	}
}
