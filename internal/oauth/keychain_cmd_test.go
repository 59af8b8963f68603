package oauth

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

// A login that fits goes to `security -i` on stdin; one whose command
// would pass Claude Code's 4032-byte stdin limit goes as arguments, as
// Claude Code falls back to, instead of being refused.
func TestKeychainWriteFallsBackToArgvForLargeLogins(t *testing.T) {
	small := []byte(`{"claudeAiOauth":{"accessToken":"a"}}`)
	stdin, args := keychainWriteCmd("ada", "Claude Code-credentials", small)
	if !slices.Equal(args, []string{"-i"}) || !strings.HasSuffix(string(stdin), " -X "+hex.EncodeToString(small)+"\n") {
		t.Fatalf("small login: args %v stdin %q", args, stdin)
	}
	large := []byte(`{"claudeAiOauth":{"accessToken":"` + strings.Repeat("x", 2100) + `"}}`)
	stdin, args = keychainWriteCmd("ada", "Claude Code-credentials", large)
	want := []string{"add-generic-password", "-U", "-a", "ada", "-s", "Claude Code-credentials", "-X", hex.EncodeToString(large)}
	if stdin != nil || !slices.Equal(args, want) {
		t.Fatalf("large login: stdin %d bytes, args %.80v", len(stdin), args)
	}
}
