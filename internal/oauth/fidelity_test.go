package oauth

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/realclients"
)

// The fidelity test reads the installed, pinned Claude Code and Codex CLI
// packages (internal/realclients) and fails when a value subpool's logins
// and refreshes use is no longer in them: the next release that moves an
// endpoint or a scope fails this test instead of a person's login. When it
// fails, read the new release's bundle (strings, grep) and change
// provider.go, lockfile.go and docs/subscriptions.md together.
func TestLoginValuesAreTheRealClients(t *testing.T) {
	if _, err := realclients.Dir(); err != nil {
		t.Fatal(err)
	}
	claude := printable(t, claudeCodeBinary(t))
	codexBin := codexBinary(t)
	codex := printable(t, codexBin)

	for _, c := range []struct{ what, in, want string }{
		// Claude Code's OAuth config object and its builders.
		{"Claude login page", claude, `CLAUDE_AI_AUTHORIZE_URL:"` + AnthropicAuthorizeURL + `"`},
		{"Claude token URL", claude, `TOKEN_URL:"` + AnthropicTokenURL + `"`},
		{"Claude client id", claude, `CLIENT_ID:"` + AnthropicClientID + `"`},
		{"Claude OAuth beta", claude, `"` + OAuthBeta + `"`},
		{"Claude refresh grant", claude, `grant_type:"refresh_token",refresh_token:`},
		// The locks lockfile.go takes as Claude Code takes them.
		{"Claude refresh lock", claude, `"` + claudeRefreshLock + `"`},
		{"Claude refresh lock stale and update", claude, `stale:60000,update:5000`},
		{"Claude refresh lock owner", claude, `"` + claudeLockOwner + `"`},
		{"Claude write lock", claude, `"` + claudeStorageLock + `"`},
		{"Claude write lock stale", claude, `stale:15000`},
		{"Claude secure-storage dir", claude, `process.env.CLAUDE_SECURESTORAGE_CONFIG_DIR`},
		// Codex: the issuer, the paths composed on it, the client id, the
		// scope and the parameters of its authorize URL.
		{"Codex issuer", codex, "https://auth.openai.com"},
		{"Codex authorize path", codex, strings.TrimPrefix(OpenAIAuthorizeURL, "https://auth.openai.com")},
		{"Codex token URL", codex, OpenAITokenURL},
		{"Codex client id", codex, OpenAIClientID},
		{"Codex scope", codex, OpenAIScope},
		{"Codex authorize parameter", codex, "id_token_add_organizations"},
		{"Codex authorize parameter", codex, "codex_cli_simplified_flow"},
		{"Codex authorize parameter", codex, "originator"},
		{"Codex callback path", codex, "/auth/callback"},
		{"Codex callback host", codex, "http://localhost:"},
		{"Codex fallback port", codex, "falling back to the registered fallback port"},
		{"Codex backend", codex, ChatGPTBaseURL},
		// codexlock.go: the commit lock's name and Codex's word for its
		// timeout (the real Codex's behaviour: TestRealCodexHonoursSubpoolsLocks).
		{"Codex commit lock", codex, "json.lock"},
		{"Codex commit lock timeout", codex, "credential commit lock timed out"},
	} {
		if !strings.Contains(c.in, c.want) {
			t.Errorf("%s: %q is not in the installed client any more", c.what, c.want)
		}
	}
	claudePatterns(t, claude)
	for _, s := range append(strings.Fields(AnthropicScope), claudeKeptScopes...) {
		if !strings.Contains(claude, `"`+s+`"`) {
			t.Errorf("Claude scope %q is not in Claude Code any more", s)
		}
	}
	// Claude Code listens on a port the OS picks: http://localhost:${port}/callback.
	if !regexp.MustCompile(`\x60http://localhost:\$\{[A-Za-z_$][A-Za-z0-9_$]*\}/callback\x60`).MatchString(claude) {
		t.Errorf("Claude Code's callback is no longer http://localhost:${port}/callback (AnthropicRedirectURI)")
	}
	for _, u := range []string{OpenAIRedirectURI, OpenAIFallbackRedirectURI} {
		if !strings.HasPrefix(u, "http://localhost:") || !strings.HasSuffix(u, "/auth/callback") {
			t.Errorf("%s is not Codex's callback shape", u)
		}
	}
	codexPorts(t, codexBin)
}

// claudePatterns checks the shapes of Claude Code's code that subpool
// follows, each a pattern over its bundle.
func claudePatterns(t *testing.T, claude string) {
	t.Helper()
	// The owner record lockowner.go writes and reads, field for field, and
	// how long a held lock's mtime must stand still before it is read.
	for what, re := range map[string]string{
		"Claude owner record": `\(\{pid:[\w$]+\(\)\.int\(\),procStart:[\w$]+\(\)\.max\(64\)\.optional\(\),pidDomain:[\w$]+\(\)\.max\(512\),pidSpace:[\w$]+\(\)\.max\(512\),lockBirthtimeMs:[\w$]+\(\)\.positive\(\),legacyLockBirthtimeMs:[\w$]+\(\)\.positive\(\)\.optional\(\)\}\)`,
		"Claude holder watch": `=7500;function [\w$]+\([\w$]+,[\w$]+\)\{return [\w$]+\.mtimeMs!==void 0`,
		// claudeRefreshAs: the refresh body, the stored client and scopes,
		// the widening of a claude.ai login and its invalid_scope fallback,
		// and what the save keeps (source.go).
		"Claude refresh body":    `\{grant_type:"refresh_token",refresh_token:[\w$]+,client_id:[\w$]+\?\?[\w$]+\(\)\.CLIENT_ID,scope:[\w$]+\.join\(" "\)\}`,
		"Claude stored client":   `=Boolean\(\([\w$]+\([\w$]+\.scopes\)\|\|[\w$]+\.subscriptionType\)&&![\w$]+\.clientId\)`,
		"Claude refresh scopes":  `\[[\w$]+,[\w$]+,[\w$]+,"user:mcp_servers","user:file_upload"\];function [\w$]+\(\)\{let [\w$]+=[\w$]+\(\),[\w$]+=\[\.\.\.[\w$]+\];if\([\w$]+\.PLUGINS_SCOPE_REGISTERED\)[\w$]+\.push\([\w$]+\)`,
		"Claude plugins scope":   `PLUGINS_SCOPE_REGISTERED:!0`,
		"Claude kept scopes":     `=\[[\w$]+,[\w$]+,[\w$]+\];function [\w$]+\([\w$]+\)\{if\(!Array\.isArray\([\w$]+\)\)return\[\];`,
		"Claude scope fallback":  `\.code==="invalid_scope"`,
		"Claude saves the grant": `scopes:[\w$]+\.scopes,subscriptionType:[\w$]+\.subscriptionType,.{0,200}clientId:[\w$]+\.clientId\}`,
		// claudeStorage and claudeKeychainService: the dirs in NFC, and
		// the keychain item named after the NFC one's hash.
		"Claude config dir NFC":   `\?\?[\w$]+\([\w$]+\(\),"\.claude"\)\)\.normalize\("NFC"\)`,
		"Claude storage dir NFC":  `CLAUDE_SECURESTORAGE_CONFIG_DIR;if\([\w$]+!==void 0\)return\([\w$]+\|\|[\w$]+\([\w$]+\(\),"\.claude"\)\)\.normalize\("NFC"\)`,
		"Claude keychain NFC":     `[\w$]+!==void 0\?[\w$]+\.normalize\("NFC"\):[\w$]+\(\),[\w$]+=[\w$]+\?"":` + "`-\\$\\{[\\w$]+\\(\"sha256\"\\)\\.update\\([\\w$]+\\)\\.digest\\(\"hex\"\\)\\.substring\\(0,8\\)\\}`",
		"Claude keychain service": "`Claude Code\\$\\{[\\w$]+\\(\\)\\.OAUTH_FILE_SUFFIX\\}\\$\\{[\\w$]+\\}\\$\\{[\\w$]+\\}`",
		"Claude pid domain":       "`linux:\\$\\{[\\w$]+\\}:\\$\\{[\\w$]+\\}`",
	} {
		if !regexp.MustCompile(re).MatchString(claude) {
			t.Errorf("%s: /%s/ is not in Claude Code any more", what, re)
		}
	}
}

// codexPorts checks the two callback ports in Codex's machine code: Rust
// keeps numbers as immediates, not text. bind_server compares the port it
// was given with DEFAULT_PORT (cmpw $1455, …) and, falling back, formats
// FALLBACK_PORT from a u16 constant it loads by address (lea rip+…), a few
// kilobytes apart in one function. The check reads x86-64 code, the build
// make test installs on Linux; find the two again with objdump -d near the
// "registered fallback port" message if a compiler change moves them.
func codexPorts(t *testing.T, path string) {
	t.Helper()
	def, fb := portOf(t, OpenAIRedirectURI), portOf(t, OpenAIFallbackRedirectURI)
	f, err := elf.Open(path)
	if err != nil || f.Machine != elf.EM_X86_64 {
		t.Fatalf("the port check reads the x86-64 Linux Codex binary; %s is not one (%v)", path, err)
	}
	defer f.Close()
	text, ro := f.Section(".text"), f.Section(".rodata")
	if text == nil || ro == nil {
		t.Fatalf("%s has no .text or .rodata", path)
	}
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	rodata, err := ro.Data()
	if err != nil {
		t.Fatal(err)
	}
	const window = 16 << 10
	found := false
	for _, at := range cmp16Sites(code, def) {
		lo, hi := max(0, at-window), min(len(code)-7, at+window)
		for i := lo; i < hi && !found; i++ {
			if (code[i] != 0x48 && code[i] != 0x4c) || code[i+1] != 0x8d || code[i+2]&0xc7 != 0x05 {
				continue
			}
			disp := int64(int32(binary.LittleEndian.Uint32(code[i+3:])))
			target := int64(text.Addr) + int64(i) + 7 + disp
			off := target - int64(ro.Addr)
			if off >= 0 && off+2 <= int64(len(rodata)) && binary.LittleEndian.Uint16(rodata[off:]) == fb {
				found = true
			}
		}
		if found {
			break
		}
	}
	if !found {
		t.Errorf("Codex's machine code no longer compares the callback port with %d and falls back to %d (OpenAIRedirectURI, OpenAIFallbackRedirectURI)", def, fb)
	}
}

// cmp16Sites lists where code compares a 16-bit operand with the
// immediate v (66 81 /7 iw).
func cmp16Sites(code []byte, v uint16) []int {
	var out []int
	for i := 0; i+4 < len(code); i++ {
		if code[i] != 0x66 || code[i+1] != 0x81 {
			continue
		}
		m := code[i+2]
		mod, reg, rm := m>>6, (m>>3)&7, m&7
		if reg != 7 {
			continue
		}
		n := 3
		if mod != 3 && rm == 4 {
			n++ // SIB
		}
		switch {
		case mod == 1:
			n++
		case mod == 2, mod == 0 && rm == 5:
			n += 4
		}
		if i+n+2 <= len(code) && binary.LittleEndian.Uint16(code[i+n:]) == v {
			out = append(out, i)
		}
	}
	return out
}

func portOf(t *testing.T, u string) uint16 {
	t.Helper()
	var p int
	for _, part := range strings.Split(strings.TrimPrefix(u, "http://localhost:"), "/")[:1] {
		for _, r := range part {
			p = p*10 + int(r-'0')
		}
	}
	return uint16(p)
}

// printable is what `strings` prints of a file: its runs of at least four
// printable ASCII bytes, one per line. Claude Code's JavaScript sits in its
// native binary as text; Codex's constants are Rust string literals.
func printable(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read the installed client: %v", err)
	}
	var out bytes.Buffer
	out.Grow(len(b) / 4)
	start := -1
	for i, c := range b {
		ok := c >= 0x20 && c < 0x7f || c == '\t'
		if ok && start < 0 {
			start = i
		}
		if !ok && start >= 0 {
			if i-start >= 4 {
				out.Write(b[start:i])
				out.WriteByte('\n')
			}
			start = -1
		}
	}
	if start >= 0 && len(b)-start >= 4 {
		out.Write(b[start:])
	}
	return out.String()
}

// claudeCodeBinary is the native Claude Code the package's bin runs.
func claudeCodeBinary(t *testing.T) string {
	t.Helper()
	dir, err := realclients.Package("@anthropic-ai/claude-code")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "bin", "claude.exe"), filepath.Join(dir, "cli.js")} {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 1<<20 {
			return p
		}
	}
	t.Fatalf("no Claude Code program (bin/claude.exe or cli.js) in %s; reinstall the real clients (rm -rf the realclients cache)", dir)
	return ""
}

// codexBinary is the native Codex of this platform's optional package.
func codexBinary(t *testing.T) string {
	t.Helper()
	d, err := realclients.Dir()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(d, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(m) == 0 {
		t.Fatalf("no Codex binary under %s/node_modules/@openai/codex-*/vendor/*/bin; reinstall the real clients", d)
	}
	return m[0]
}

// The Google login and the gemini-cli import against the installed Gemini
// CLI: its OAuth client, scopes, authorize parameters and callbacks
// (code_assist/oauth2.ts), google-auth-library's endpoints and refresh
// form as bundled, and where and how it keeps its login
// (config/storage.ts, utils/paths.ts). When it fails, read the new
// bundle and change google.go, google_source.go and docs together.
func TestGoogleLoginValuesAreGeminiCLIs(t *testing.T) {
	for _, src := range geminiChunks(t, "// packages/core/src/code_assist/oauth2.ts") {
		for _, c := range []struct{ what, re string }{
			{"client id", `var OAUTH_CLIENT_ID = "` + regexp.QuoteMeta(GoogleClientID) + `"`},
			{"client secret", `var OAUTH_CLIENT_SECRET = "` + regexp.QuoteMeta(GoogleClientSecret) + `"`},
			{"loopback callback", "const redirectUri = `http://127\\.0\\.0\\.1:\\$\\{port\\}/oauth2callback`"},
			{"callback path", `req\.url\.indexOf\("/oauth2callback"\) === -1`},
			{"free port", `server\.listen\(0, \(\) => \{`},
			{"paste callback", `const redirectUri = "` + regexp.QuoteMeta(GooglePasteRedirectURI) + `"`},
			{"offline access", `redirect_uri: redirectUri,\s*access_type: "offline",\s*scope: OAUTH_SCOPE,\s*state\s*\}\)`},
			{"PKCE on the paste login", `access_type: "offline",\s*scope: OAUTH_SCOPE,\s*code_challenge_method: import_google_auth_library\d*\.CodeChallengeMethod\.S256`},
			{"state checked", `qs\.get\("state"\) !== state`},
			{"authorize URL", `oauth2AuthBaseUrl: "` + regexp.QuoteMeta(GoogleAuthorizeURL) + `"`},
			{"token URL", `oauth2TokenUrl: "` + regexp.QuoteMeta(GoogleTokenURL) + `"`},
			{"refresh form", `refresh_token: refreshToken,\s*client_id: this\._clientId,\s*client_secret: this\._clientSecret,\s*grant_type: "refresh_token"\s*\};`},
			{"forms, not JSON", `data: new URLSearchParams\(\(0, util_1\.removeUndefinedValuesInObject\)\(data\)\)`},
			{"secret in the exchange", `if \(this\.clientAuthentication === ClientAuthentication\.ClientSecretPost\) \{\s*values\.client_secret = this\._clientSecret;`},
			{"refresh token kept", `tokens\.refresh_token = this\.credentials\.refresh_token;`},
			{"userinfo", `"` + regexp.QuoteMeta(GoogleUserInfoURL) + `",\s*\{\s*headers: \{\s*Authorization: ` + "`Bearer \\$\\{\\w+\\}`"},
			{"email cached", `cacheGoogleAccount\(\w+\.email\)`},
			// Storage: the file is the default; only the env var moves it.
			{"creds file", `var OAUTH_FILE = "` + geminiCredsFile + `"`},
			{"gemini dir", `var GEMINI_DIR = "` + regexp.QuoteMeta(geminiDirName) + `"`},
			{"GEMINI_CLI_HOME", `const envHome = process\.env\["GEMINI_CLI_HOME"\];\s*if \(envHome\) \{\s*return envHome;`},
			{"creds path", `static getOAuthCredsPath\(\) \{\s*return path\d*\.join\(_Storage\.getGlobalGeminiDir\(\), OAUTH_FILE\);`},
			{"accounts file", `var GOOGLE_ACCOUNTS_FILENAME = "` + geminiAccountsFile + `"`},
			{"encrypted only when asked", `return process\.env\[FORCE_ENCRYPTED_FILE_ENV_VAR\] === "true";`},
			{"encrypted env var", `var FORCE_ENCRYPTED_FILE_ENV_VAR = "GEMINI_FORCE_ENCRYPTED_FILE_STORAGE"`},
			{"encrypted file", `"` + geminiEncrypted + `"`},
			{"keychain service", `var KEYCHAIN_SERVICE_NAME = "gemini-cli-oauth"`},
			{"file written whole", `const credString = JSON\.stringify\(\w+, null, 2\);\s*await \w+\.writeFile\(filePath, credString, \{ mode: 384 \}\);`},
			{"expiry in ms", `tokens\.expiry_date = \(/\* @__PURE__ \*/ new Date\(\)\)\.getTime\(\) \+ res\.data\.expires_in \* 1e3;`},
		} {
			if !regexp.MustCompile(c.re).MatchString(src) {
				t.Errorf("%s: /%s/ is not in Gemini CLI's bundle any more", c.what, c.re)
			}
		}
		// The scopes, all of them and no others.
		m := regexp.MustCompile(`var OAUTH_SCOPE = \[([^\]]*)\]`).FindStringSubmatch(src)
		if m == nil {
			t.Fatal("no OAUTH_SCOPE in Gemini CLI's bundle")
		}
		var theirs []string
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
			theirs = append(theirs, q[1])
		}
		if strings.Join(theirs, " ") != GoogleScope {
			t.Errorf("Gemini CLI's scopes are %q, GoogleScope is %q", theirs, GoogleScope)
		}
	}
	if port := portOfRedirect(t, GoogleRedirectURI); port != "0" {
		t.Errorf("GoogleRedirectURI %s must listen on a free port, as Gemini CLI does", GoogleRedirectURI)
	}
}

func portOfRedirect(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Hostname() != "127.0.0.1" || p.Path != "/oauth2callback" {
		t.Fatalf("%s is not Gemini CLI's callback shape", u)
	}
	return p.Port()
}

// geminiChunks returns every bundle file of the installed Gemini CLI that
// holds marker (esbuild names a source file in a comment where its code
// begins; the same code sits in more than one chunk).
func geminiChunks(t *testing.T, marker string) []string {
	t.Helper()
	out, err := realclients.BundleFiles("@google/gemini-cli", marker)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
