package oauth

import (
	"encoding/hex"
	"strings"
)

// securityStdinMax is the longest command Claude Code 2.1.197 gives
// `security -i` on stdin (its Tyd = 4032: the tool reads commands of at most
// 4096 bytes, less some room). A longer one, a login whose JSON has grown
// past about 2 KB, goes as arguments instead; Claude Code does the same and
// warns "Keychain payload … exceeds security -i stdin limit; using argv".
const securityStdinMax = 4032

// keychainWriteCmd is how the macOS security tool is asked to replace a
// generic password: on stdin through `security -i` when the command fits,
// so the secret shows in no process list, else as arguments, as Claude Code
// falls back to. The password is hex (-X), so it needs no quoting. It lives
// outside source_darwin.go so that its choice is tested on every platform.
func keychainWriteCmd(account, service string, data []byte) (stdin []byte, args []string) {
	h := hex.EncodeToString(data)
	line := "add-generic-password -U -a " + quote(account) + " -s " + quote(service) + " -X " + h + "\n"
	if len(line) <= securityStdinMax {
		return []byte(line), []string{"-i"}
	}
	return nil, []string{"add-generic-password", "-U", "-a", account, "-s", service, "-X", h}
}

// quote single-quotes s for the security tool's command line.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
