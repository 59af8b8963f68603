package oauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/subpool/subpool/internal/atomicfile"
)

// Source kinds: the CLIs whose logins subpool imports.
const (
	SourceClaudeCode = "claude-code"
	SourceCodex      = "codex"
	// SourceGeminiCLI is in google_source.go.
)

// ErrNoLogin: the CLI holds no subscription login subpool can use.
var ErrNoLogin = errors.New("no login found")

// Source is where an imported login lives: the CLI's token file or, for
// Claude Code on macOS, its keychain item. Refresh tokens rotate, so the
// CLI and subpool must share one: subpool re-reads the source before it
// refreshes and writes what it got back after.
type Source struct {
	Kind     string // SourceClaudeCode, SourceCodex or SourceGeminiCLI
	Path     string // the CLI's token file
	Keychain string // macOS: the keychain item (service name) instead of Path
	// Dir is Claude Code's secure-storage directory, where it takes its
	// refresh and write locks (lockfile.go); "" for Codex and Gemini CLI,
	// which take none. Logins imported before subpool knew it use the
	// token file's directory.
	Dir string
}

// lockDir is where Claude Code takes its locks for this login; "" when
// it takes none (Codex, or a keychain item imported without Dir).
func (s Source) lockDir() string {
	if s.Kind != SourceClaudeCode {
		return ""
	}
	if s.Dir != "" {
		return s.Dir
	}
	if s.Path != "" {
		return filepath.Dir(s.Path)
	}
	return ""
}

// IsZero reports a login that was not imported.
func (s Source) IsZero() bool { return s.Kind == "" }

// key identifies the login's storage, so that two credentials imported
// from one source never refresh at the same time.
func (s Source) key() string {
	if s.Keychain != "" {
		return s.Kind + "\x00keychain\x00" + s.Keychain
	}
	return s.Kind + "\x00" + s.Path
}

// String names the source for messages.
func (s Source) String() string {
	if s.Keychain != "" {
		return fmt.Sprintf("the macOS keychain item %q", s.Keychain)
	}
	return s.Path
}

// DetectClaudeCode finds Claude Code's login where Claude Code keeps it:
// .credentials.json in its secure-storage directory, or on macOS the
// keychain item "Claude Code-credentials[-<hash>]", which it prefers
// there. See claudeStorage for the directory.
func DetectClaudeCode() (Source, error) {
	dir, hashOf, err := claudeStorage()
	if err != nil {
		return Source{}, err
	}
	file := filepath.Join(dir, ".credentials.json")
	if svc, ok := detectClaudeKeychain(hashOf); ok {
		return Source{Kind: SourceClaudeCode, Keychain: svc, Dir: dir}, nil
	}
	if _, err := os.Stat(file); err != nil {
		return Source{}, fmt.Errorf("%w: Claude Code has no login in %s; run `claude` and log in there first, or use `subpool login anthropic`", ErrNoLogin, file)
	}
	return Source{Kind: SourceClaudeCode, Path: file, Dir: dir}, nil
}

// claudeStorage is where Claude Code 2.1.337 keeps its credentials and
// takes its locks: $CLAUDE_SECURESTORAGE_CONFIG_DIR when it is set (set but
// empty means ~/.claude), else $CLAUDE_CONFIG_DIR, else ~/.claude. hashOf
// is what its macOS keychain service name is suffixed with the hash of:
// the secure-storage directory when that variable is set and not empty,
// else a custom CLAUDE_CONFIG_DIR; "" for none. Claude Code normalises
// both to NFC first, so a path typed or stored decomposed (NFD, as macOS
// file dialogs hand them) names the same storage and keychain item.
func claudeStorage() (dir, hashOf string, err error) {
	if d, ok := os.LookupEnv("CLAUDE_SECURESTORAGE_CONFIG_DIR"); ok {
		if d != "" {
			d = norm.NFC.String(d)
			return d, d, nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", fmt.Errorf("cannot find your home folder: %v", err)
		}
		return norm.NFC.String(filepath.Join(home, ".claude")), "", nil
	}
	dir, custom, err := claudeDir()
	if err != nil || !custom {
		return dir, "", err
	}
	return dir, dir, nil
}

// claudeKeychainService is the macOS keychain item Claude Code keeps its
// login in: "Claude Code-credentials", with "-" and the first 8 hex
// digits of hashOf's SHA-256 appended when hashOf is set.
func claudeKeychainService(hashOf string) string {
	svc := claudeKeychainBase
	if hashOf != "" {
		sum := sha256.Sum256([]byte(hashOf))
		svc += "-" + hex.EncodeToString(sum[:])[:8]
	}
	return svc
}

const claudeKeychainBase = "Claude Code-credentials"

// claudeDir is Claude Code's config directory: $CLAUDE_CONFIG_DIR, else
// ~/.claude, in NFC as Claude Code reads it.
func claudeDir() (dir string, custom bool, err error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return norm.NFC.String(d), true, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", false, fmt.Errorf("cannot find your home folder: %v", err)
	}
	return norm.NFC.String(filepath.Join(home, ".claude")), false, nil
}

// DetectCodex finds Codex CLI's login: $CODEX_HOME/auth.json, default
// ~/.codex/auth.json. A Codex set to keep its login in the OS keyring
// (cli_auth_credentials_store = "keyring", or "auto" where a keyring
// works) has no file to import; docs/subscriptions.md says what to do.
func DetectCodex() (Source, error) {
	dir := os.Getenv("CODEX_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Source{}, fmt.Errorf("cannot find your home folder: %v", err)
		}
		dir = filepath.Join(home, ".codex")
	}
	file := filepath.Join(dir, "auth.json")
	if _, err := os.Stat(file); err != nil {
		return Source{}, fmt.Errorf("%w: Codex has no login in %s; run `codex login` first (or set CODEX_HOME); if Codex keeps its login in the OS keyring (cli_auth_credentials_store = keyring or auto), use `subpool login openai`", ErrNoLogin, file)
	}
	return Source{Kind: SourceCodex, Path: file}, nil
}

// claudeFile is the part of Claude Code's credentials subpool reads.
type claudeFile struct {
	OAuth *struct {
		AccessToken      string   `json:"accessToken"`
		RefreshToken     string   `json:"refreshToken"`
		ExpiresAt        int64    `json:"expiresAt"` // unix milliseconds
		SubscriptionType string   `json:"subscriptionType"`
		Scopes           []string `json:"scopes"`
		ClientID         string   `json:"clientId"`
	} `json:"claudeAiOauth"`
}

// codexFile is the part of Codex CLI's auth.json subpool reads.
type codexFile struct {
	APIKey *string `json:"OPENAI_API_KEY"`
	Tokens *struct {
		IDToken      string `json:"id_token"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		AccountID    string `json:"account_id"`
	} `json:"tokens"`
}

// Read returns the login the source holds now. The error names the
// source, never a token.
func (s Source) Read() (Tokens, error) {
	b, err := s.load()
	if err != nil {
		return Tokens{}, err
	}
	var t Tokens
	switch s.Kind {
	case SourceClaudeCode:
		var f claudeFile
		if err := json.Unmarshal(b, &f); err != nil {
			return Tokens{}, fmt.Errorf("%s is not valid JSON", s)
		}
		if f.OAuth == nil || (f.OAuth.AccessToken == "" && f.OAuth.RefreshToken == "") {
			return Tokens{}, fmt.Errorf("%w: %s holds no Claude subscription login; log in with `claude` first", ErrNoLogin, s)
		}
		t = Tokens{Access: f.OAuth.AccessToken, Refresh: f.OAuth.RefreshToken, Plan: f.OAuth.SubscriptionType,
			ClientID: f.OAuth.ClientID, Scopes: strings.Join(f.OAuth.Scopes, " ")}
		if f.OAuth.ExpiresAt > 0 {
			t.ExpiresAt = time.UnixMilli(f.OAuth.ExpiresAt).UTC()
		}
	case SourceCodex:
		var f codexFile
		if err := json.Unmarshal(b, &f); err != nil {
			return Tokens{}, fmt.Errorf("%s is not valid JSON", s)
		}
		if f.Tokens == nil || (f.Tokens.AccessToken == "" && f.Tokens.RefreshToken == "") {
			if f.APIKey != nil && *f.APIKey != "" {
				return Tokens{}, fmt.Errorf("%w: Codex in %s is logged in with an API key, not ChatGPT; add the key with `subpool add-key openai` instead", ErrNoLogin, s)
			}
			return Tokens{}, fmt.Errorf("%w: %s holds no ChatGPT login; run `codex login` first", ErrNoLogin, s)
		}
		t = Tokens{Access: f.Tokens.AccessToken, Refresh: f.Tokens.RefreshToken, IDToken: f.Tokens.IDToken, AccountID: f.Tokens.AccountID}
	case SourceGeminiCLI:
		if t, err = readGeminiCLI(s, b); err != nil {
			return Tokens{}, err
		}
	default:
		return Tokens{}, fmt.Errorf("unknown login source %q", s.Kind)
	}
	t.fillFromJWTs()
	t.Source = s
	return t, nil
}

func (s Source) load() ([]byte, error) {
	if s.Keychain != "" {
		return readKeychain(s.Keychain)
	}
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is gone", ErrNoLogin, s.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", s.Path, err)
	}
	return b, nil
}

// Write puts t's tokens into the source so the CLI uses them next,
// changing nothing else: other keys stay as they were, in their order,
// and the file keeps its mode (Gemini CLI's gets 0600, as the CLI sets
// it on every write). The file is replaced atomically (temp file, fsync,
// rename), so the CLI never reads half of it.
func (s Source) Write(t Tokens) error { return s.write(t, "") }

// errSourceMoved: the source holds a refresh token that is neither the
// one subpool spent nor the one it got: someone logged in again there.
var errSourceMoved = errors.New("the source holds another login now")

// write is Write, but when expect is set it leaves a source alone whose
// refresh token is no longer expect (nor t's): that login is newer than
// subpool's and must not be overwritten. Nor is a source overwritten that
// holds t's own refresh token with an access token that outlives t's:
// the CLI refreshed that grant after subpool did (Google's refresh tokens
// do not rotate, so both refreshes hold), and its token stays.
func (s Source) write(t Tokens, expect string) error {
	b, err := s.load()
	if err != nil {
		return err
	}
	if expect != "" {
		cur, err := s.Read()
		if err == nil && cur.Refresh != expect && cur.Refresh != t.Refresh {
			return errSourceMoved
		}
		// A newer login of the CLI's with the same refresh token (Google's
		// do not rotate) stays; within a second is no newer: the CLI
		// writes milliseconds, expiries here are kept in seconds.
		if err == nil && cur.Refresh == t.Refresh && cur.Access != t.Access && cur.ExpiresAt.After(t.ExpiresAt.Add(time.Second)) {
			return nil
		}
	}
	var out []byte
	switch s.Kind {
	case SourceClaudeCode:
		fields := map[string]any{"accessToken": t.Access, "refreshToken": t.Refresh}
		if !t.ExpiresAt.IsZero() {
			fields["expiresAt"] = t.ExpiresAt.UnixMilli()
		}
		// As Claude Code saves a refresh: the scopes granted, when they
		// are a claude.ai login's, and the client it was refreshed with.
		if sc := strings.Fields(t.Scopes); slices.Contains(sc, scopeInference) {
			fields["scopes"] = sc
		}
		if t.ClientID != "" {
			fields["clientId"] = t.ClientID
		}
		out, err = editJSON(b, "claudeAiOauth", fields)
	case SourceCodex:
		fields := map[string]any{"access_token": t.Access, "refresh_token": t.Refresh}
		if t.IDToken != "" {
			fields["id_token"] = t.IDToken
		}
		if t.AccountID != "" {
			fields["account_id"] = t.AccountID
		}
		out, err = editJSON(b, "tokens", fields)
		if err == nil {
			// Codex refreshes by the age of last_refresh; ours counts.
			out, err = editJSON(out, "", map[string]any{"last_refresh": time.Now().UTC().Format(time.RFC3339Nano)})
		}
	case SourceGeminiCLI:
		out, err = geminiCLIFile(b, t)
	default:
		return fmt.Errorf("unknown login source %q", s.Kind)
	}
	if err != nil {
		return fmt.Errorf("cannot update %s: %v", s, err)
	}
	put := func() error {
		if s.Keychain != "" {
			return writeKeychain(s.Keychain, out)
		}
		var mode fs.FileMode // the file's own
		if s.Kind == SourceGeminiCLI {
			mode = geminiCredsMode
		}
		return replaceFile(s.Path, out, mode)
	}
	if dir := s.lockDir(); dir != "" {
		// Claude Code writes its credentials under this lock; so does
		// subpool, so neither replaces what the other just wrote.
		return claudeStorageLocked(dir, func(string, ...any) {}, put)
	}
	if s.Kind == SourceCodex {
		return codexCommitLocked(s.Path, onCodexCommitWait, put) // Codex's commit lock, likewise
	}
	return put()
}

// editJSON sets fields in the object at key (the top level for "") of
// the JSON object doc, keeping every other key and value byte for byte
// and in order, and the document's indentation.
func editJSON(doc []byte, key string, fields map[string]any) ([]byte, error) {
	top, err := parseObject(doc)
	if err != nil {
		return nil, err
	}
	target := top
	if key != "" {
		raw, ok := top.get(key)
		if !ok {
			return nil, fmt.Errorf("no %q object", key)
		}
		if target, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("%q: %v", key, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v, err := json.Marshal(fields[k])
		if err != nil {
			return nil, err
		}
		target.set(k, v)
	}
	if key != "" {
		top.set(key, target.bytes())
	}
	var buf bytes.Buffer
	if indent := indentOf(doc); indent != "" {
		err = json.Indent(&buf, top.bytes(), "", indent)
	} else {
		err = json.Compact(&buf, top.bytes())
	}
	if err != nil {
		return nil, err
	}
	if bytes.HasSuffix(bytes.TrimRight(doc, " \t\r"), []byte("\n")) {
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// object is a JSON object that remembers its key order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(b []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("not a JSON object")
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not a JSON object")
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// indentOf returns the indentation of the first indented line, "" for a
// document on one line.
func indentOf(doc []byte) string {
	i := bytes.IndexByte(doc, '\n')
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	n := 0
	for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
		n++
	}
	if n == 0 {
		return "  "
	}
	return string(rest[:n])
}

// replaceFile writes data over path atomically, with mode, or keeping
// path's mode when mode is 0. A symlinked file (a dotfiles manager's) is
// replaced at its target, so the link survives.
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot update %s: %v", path, err)
	}
	if mode == 0 {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, data, mode); err != nil {
		return fmt.Errorf("cannot update %s: %v", path, err)
	}
	return nil
}

// ClaudeCodeEmail is the email Claude Code shows for its login, from
// .claude.json's oauthAccount (beside ~/.claude, or inside a custom
// CLAUDE_CONFIG_DIR); "" when it cannot tell. Its token file does not
// say, and an import wants a label.
func ClaudeCodeEmail() string {
	dir, custom, err := claudeDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, ".claude.json")
	if !custom {
		p = filepath.Join(filepath.Dir(dir), ".claude.json")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	var v struct {
		Account struct {
			Email string `json:"emailAddress"`
		} `json:"oauthAccount"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	return v.Account.Email
}
