package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/subpool/subpool/internal/codeassist"
)

// The Google login as Gemini CLI 0.61.0 does it (packages/core/src/
// code_assist/oauth2.ts in its bundle, and google-auth-library's
// OAuth2Client there); fidelity_test.go checks each against the installed
// package.
const (
	GoogleAuthorizeURL = "https://accounts.google.com/o/oauth2/v2/auth"
	GoogleTokenURL     = "https://oauth2.googleapis.com/token"
	// GoogleClientID and GoogleClientSecret are Gemini CLI's installed-app
	// client (OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET). Google documents an
	// installed app's secret as one that cannot be kept secret; it goes
	// in the form of every token request, as google-auth-library sends
	// it (client_secret_post).
	GoogleClientID     = "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com"
	GoogleClientSecret = "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"
	// GoogleRedirectURI: Gemini CLI listens on a free port of 127.0.0.1
	// and sends http://127.0.0.1:PORT/oauth2callback; port 0 does the
	// same here.
	GoogleRedirectURI = "http://127.0.0.1:0/oauth2callback"
	// GooglePasteRedirectURI is where Gemini CLI's NO_BROWSER login sends
	// the browser: Google's page there shows the code to paste.
	GooglePasteRedirectURI = "https://codeassist.google.com/authcode"
	// GoogleScope is OAUTH_SCOPE, space-separated as the authorize URL
	// carries it.
	GoogleScope = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile"
	// GoogleUserInfoURL is where Gemini CLI asks for the account's email
	// after a login (fetchAndCacheUserInfo).
	GoogleUserInfoURL = "https://www.googleapis.com/oauth2/v2/userinfo"
)

// Google is the Google login of Gemini CLI ("Login with Google"), which
// the Code Assist API takes. tokenURL and codeAssistURL come from config
// (providers.google.token_url, code_assist_url); "" means the default.
// Requests with its tokens go to codeAssistURL (Provider.Auth's BaseURL),
// not to the Gemini API of the pool's base_url.
//
// The authorize URL carries access_type=offline, as Gemini CLI's does, so
// that Google grants a refresh token, and prompt=consent, which Gemini
// CLI does not send: Google issues a refresh token only with a consent
// screen, and skips that screen for an account that has already allowed
// the client, which is Gemini CLI's and so very likely allowed. A login
// whose answer still lacks one fails rather than dying within the hour.
// Gemini CLI sends no PKCE challenge
// on its loopback login (only on its NO_BROWSER one); subpool sends one on
// both, which Google accepts from installed apps and which keeps a stolen
// code useless. A refresh sends no scope (google-auth-library sends none)
// and Google answers it without a new refresh token: the old one holds
// (Tokens.merge keeps it). invalid_grant on a refresh means the login is
// dead; the Manager reports it as for the other providers (TokenError
// with Relogin, errors.Is auth.ErrRelogin).
func Google(tokenURL, codeAssistURL string) Provider {
	if tokenURL == "" {
		tokenURL = GoogleTokenURL
	}
	if codeAssistURL == "" {
		codeAssistURL = codeassist.DefaultEndpoint
	}
	return Provider{
		Name: NameGoogle, AuthorizeURL: GoogleAuthorizeURL, TokenURL: tokenURL,
		ClientID: GoogleClientID, ClientSecret: GoogleClientSecret,
		RedirectURI: GoogleRedirectURI, PasteRedirectURI: GooglePasteRedirectURI,
		UserInfoURL:     GoogleUserInfoURL,
		Scope:           GoogleScope,
		AuthorizeParams: map[string]string{"access_type": "offline", "prompt": "consent"},
		APIBaseURL:      codeAssistURL,
	}
}

// FetchGoogleEmail asks Google's userinfo endpoint (GoogleUserInfoURL, or
// a test's) whose access token this is, as Gemini CLI does after its
// login. The error carries the status, never the token.
func FetchGoogleEmail(ctx context.Context, c *http.Client, userInfoURL, accessToken string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, userInfoURL, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "subpool")
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("google userinfo unreachable: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("google userinfo: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("google userinfo answered %d", resp.StatusCode)
	}
	var v struct {
		Email string `json:"email"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("google userinfo answered something that is not JSON")
	}
	return v.Email, nil
}
