// Command tool does the parts of `make dist` a shell does badly: it reads
// packaging/metadata.toml, draws the hicolor icon sizes, fills templates
// (desktop entry, Homebrew formula and cask) and signs SHA256SUMS.
//
//	go run ./packaging/tool env                      metadata as shell assignments
//	go run ./packaging/tool icons SRC.png DIR        DIR/NxN/apps/ID.png
//	go run ./packaging/tool render TEMPLATE OUT [DIST]
//	go run ./packaging/tool keygen                   a throwaway key: private, then public
//	go run ./packaging/tool pubkey                   SUBPOOL_SIGNING_KEY's public half
//	go run ./packaging/tool sign DIR                 DIR/SHA256SUMS and .sig
//	go run ./packaging/tool zip OUT.zip DIR          DIR's files under DIR's name
//
// It runs from the repository's root (the Makefile's).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "packaging/tool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want a command: env, icons, render, keygen, pubkey, sign or zip")
	}
	want := map[string]int{"env": 0, "icons": 2, "render": 2, "keygen": 0, "pubkey": 0, "sign": 1, "zip": 2}
	n, ok := want[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q", args[0])
	}
	if len(args)-1 != n && !(args[0] == "render" && len(args) == 4) {
		return fmt.Errorf("%s takes %d arguments", args[0], n)
	}
	switch args[0] {
	case "env":
		return printEnv(os.Stdout)
	case "icons":
		return writeIcons(args[1], args[2])
	case "render":
		dist := ""
		if len(args) == 4 {
			dist = args[3]
		}
		return renderFile(args[1], args[2], dist)
	case "keygen":
		return keygen(os.Stdout)
	case "pubkey":
		return pubkey(os.Stdout)
	case "zip":
		return zipDir(args[1], args[2])
	}
	return signDir(args[1])
}
