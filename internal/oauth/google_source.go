package oauth

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// SourceGeminiCLI is Gemini CLI's Google login: oauth_creds.json in its
// ~/.gemini.
const SourceGeminiCLI = "gemini-cli"

// Where Gemini CLI 0.61.0 keeps its Google login (read in its bundle:
// config/storage.ts, utils/paths.ts, code_assist/oauth2.ts and
// oauth-credential-storage.ts):
//
//   - By default, as plain JSON in ~/.gemini/oauth_creds.json, written
//     whole (JSON.stringify, two-space indent) with mode 0600 after every
//     login and every refresh. ~ is $GEMINI_CLI_HOME when that is set.
//     This is what subpool imports and keeps in step.
//   - Only with GEMINI_FORCE_ENCRYPTED_FILE_STORAGE=true, in its
//     HybridTokenStorage: the OS keychain through keytar (service
//     "gemini-cli-oauth", account "main-account"), or, where no keychain
//     works or GEMINI_FORCE_FILE_STORAGE=true, the AES-GCM file
//     ~/.gemini/gemini-credentials.json, whose key is derived from the
//     host and user names. The CLI then deletes oauth_creds.json.
//     DetectGeminiCLI says so and points to `subpool login google`.
const (
	geminiDirName      = ".gemini"
	geminiCredsFile    = "oauth_creds.json"
	geminiAccountsFile = "google_accounts.json"
	geminiEncrypted    = "gemini-credentials.json"
	// geminiCredsMode is the mode Gemini CLI gives its file on every
	// write (writeFile mode 0o600, then chmod); a write-back keeps it.
	geminiCredsMode fs.FileMode = 0o600
)

// geminiDir is Gemini CLI's ~/.gemini: its homedir() is $GEMINI_CLI_HOME
// when set, else the OS home.
func geminiDir() (string, error) {
	home := os.Getenv("GEMINI_CLI_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find your home folder: %v", err)
		}
		home = h
	}
	return filepath.Join(home, geminiDirName), nil
}

// DetectGeminiCLI finds Gemini CLI's Google login: oauth_creds.json in
// $GEMINI_CLI_HOME/.gemini, default ~/.gemini.
func DetectGeminiCLI() (Source, error) {
	dir, err := geminiDir()
	if err != nil {
		return Source{}, err
	}
	file := filepath.Join(dir, geminiCredsFile)
	if _, err := os.Stat(file); err == nil {
		return Source{Kind: SourceGeminiCLI, Path: file}, nil
	}
	if _, err := os.Stat(filepath.Join(dir, geminiEncrypted)); err == nil {
		return Source{}, fmt.Errorf("%w: Gemini CLI keeps its login encrypted or in the OS keychain (GEMINI_FORCE_ENCRYPTED_FILE_STORAGE=true), not in %s; use `subpool login google`, or unset that variable and log in with `gemini` again", ErrNoLogin, file)
	}
	return Source{}, fmt.Errorf("%w: Gemini CLI has no login in %s; run `gemini` and choose Login with Google first (or set GEMINI_CLI_HOME), or use `subpool login google`; a Gemini CLI with GEMINI_FORCE_ENCRYPTED_FILE_STORAGE=true keeps it in the OS keychain, where subpool cannot share it", ErrNoLogin, file)
}

// geminiFile is the part of oauth_creds.json subpool reads: the
// Credentials object google-auth-library hands Gemini CLI.
type geminiFile struct {
	AccessToken  string      `json:"access_token"`
	RefreshToken string      `json:"refresh_token"`
	IDToken      string      `json:"id_token"`
	ExpiryDate   json.Number `json:"expiry_date"` // unix milliseconds
	// Type is set on Application Default Credentials placed there by
	// hand (a service account, gcloud's authorized_user): not a login of
	// Gemini CLI's client, which subpool could not refresh.
	Type string `json:"type"`
}

func readGeminiCLI(s Source, b []byte) (Tokens, error) {
	var f geminiFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Tokens{}, fmt.Errorf("%s is not valid JSON", s)
	}
	if f.Type != "" {
		return Tokens{}, fmt.Errorf("%w: %s holds Application Default Credentials (%s), not Gemini CLI's Google login; use `subpool login google`", ErrNoLogin, s, short(f.Type))
	}
	if f.AccessToken == "" && f.RefreshToken == "" {
		return Tokens{}, fmt.Errorf("%w: %s holds no Google login; run `gemini` and choose Login with Google first", ErrNoLogin, s)
	}
	t := Tokens{Access: f.AccessToken, Refresh: f.RefreshToken, IDToken: f.IDToken}
	// A JavaScript number: Date.getTime() plus expires_in × 1000, so whole
	// milliseconds, but read as a float in case a writer added a fraction.
	if ms, err := f.ExpiryDate.Float64(); err == nil && ms > 0 && ms < math.MaxInt64 {
		t.ExpiresAt = time.UnixMilli(int64(ms)).UTC()
	}
	return t, nil
}

// geminiCLIFile is oauth_creds.json with t's tokens in it, its other keys
// (scope, token_type) as they were.
func geminiCLIFile(doc []byte, t Tokens) ([]byte, error) {
	fields := map[string]any{"access_token": t.Access, "refresh_token": t.Refresh}
	if !t.ExpiresAt.IsZero() {
		fields["expiry_date"] = t.ExpiresAt.UnixMilli()
	}
	if t.IDToken != "" {
		fields["id_token"] = t.IDToken
	}
	return editJSON(doc, "", fields)
}

// GeminiCLIEmail is the account Gemini CLI shows for its login: "active"
// in google_accounts.json beside oauth_creds.json, which it writes after
// asking Google's userinfo; "" when it cannot tell.
func GeminiCLIEmail() string {
	dir, err := geminiDir()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, geminiAccountsFile))
	if err != nil {
		return ""
	}
	var v struct {
		Active *string `json:"active"`
	}
	if json.Unmarshal(b, &v) != nil || v.Active == nil {
		return ""
	}
	return *v.Active
}
