//go:build !unix && !windows

package oauth

import "os"

// tryFlock: no advisory locks on this OS, and no Codex either.
func tryFlock(*os.File) (bool, error) { return true, nil }
