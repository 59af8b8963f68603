//go:build !darwin

package oauth

import "errors"

// Claude Code keeps its login in a keychain item only on macOS; elsewhere
// it is always the credentials file.

func detectClaudeKeychain(string) (string, bool) { return "", false }

var errNoKeychain = errors.New("Claude Code keeps its login in the keychain only on macOS")

func readKeychain(string) ([]byte, error) { return nil, errNoKeychain }

func writeKeychain(string, []byte) error { return errNoKeychain }
