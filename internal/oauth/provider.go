// Package oauth logs in to the subscriptions subpool pools (Claude Pro/Max,
// ChatGPT/Codex and the Google login of Gemini CLI) and keeps their tokens
// fresh.
//
//   - Login runs the PKCE authorization-code flow: the browser goes to the
//     provider, comes back to a callback on localhost, or the user pastes
//     the address it ended on.
//   - Manager hands out access tokens, refreshing them ahead of expiry and
//     when an upstream refuses one, once per credential at a time. A
//     rotated refresh token is stored before it is used.
//   - Source reads and writes the token files of Claude Code, Codex CLI and
//     Gemini CLI, so an imported login and the CLI it came from share one
//     refresh token instead of invalidating each other's.
//
// docs/subscriptions.md tells the rules in prose.
package oauth

import (
	"net/http"
	"slices"
	"strings"

	"github.com/subpool/subpool/proxy/auth"
)

// Provider names: the built-in pools a login belongs to.
const (
	NameAnthropic = "anthropic"
	NameOpenAI    = "openai"
	NameGoogle    = "google"
)

// Defaults as the real clients use them today, read from their own
// packages (Claude Code 2.1.337, Codex CLI 0.171.0); fidelity_test.go fails
// when a newer pinned release no longer carries one. Endpoints have moved
// before, so every URL is a field a caller may override.
const (
	// AnthropicAuthorizeURL is Claude Code's CLAUDE_AI_AUTHORIZE_URL, where
	// it sends a claude.ai (Pro/Max) login; the console login page
	// (platform.claude.com/oauth/authorize) is for API-billing accounts.
	AnthropicAuthorizeURL = "https://claude.com/cai/oauth/authorize"
	AnthropicTokenURL     = "https://platform.claude.com/v1/oauth/token"
	AnthropicClientID     = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
	// AnthropicRedirectURI: Claude Code listens on a port the OS picks and
	// sends http://localhost:PORT/callback; port 0 does the same here.
	AnthropicRedirectURI = "http://localhost:0/callback"
	// AnthropicScope is the scope Claude Code refreshes with (its claude.ai
	// scopes; 2.1.337 adds user:plugins). Its login also asks for
	// org:create_api_key, which subpool has no use for.
	AnthropicScope = "user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload user:plugins"

	OpenAIAuthorizeURL = "https://auth.openai.com/oauth/authorize"
	OpenAITokenURL     = "https://auth.openai.com/oauth/token"
	OpenAIClientID     = "app_EMoamEEZ73f0CkXaXp7hrann"
	// OpenAIRedirectURI and OpenAIFallbackRedirectURI are the two callback
	// addresses registered for Codex's client id: Codex listens on 1455 and
	// falls back to 1457 when 1455 stays taken.
	OpenAIRedirectURI         = "http://localhost:1455/auth/callback"
	OpenAIFallbackRedirectURI = "http://localhost:1457/auth/callback"
	OpenAIScope               = "openid profile email offline_access api.connectors.read api.connectors.invoke"
	// OpenAIOriginator is the originator parameter of the ChatGPT login.
	// Codex sends its own name there (codex_cli_rs); subpool sends its own,
	// because it never claims to be another client.
	OpenAIOriginator = "subpool"
	ChatGPTBaseURL   = "https://chatgpt.com/backend-api/codex"

	// OAuthBeta is the anthropic-beta value the Messages API requires with
	// an OAuth bearer token.
	OAuthBeta = "oauth-2025-04-20"
)

// anthropicTokenURLs is where Anthropic's token endpoint has lived, newest
// first: platform.claude.com since Aug 2026, api.anthropic.com from Feb
// 2026, console.anthropic.com before (protocols.md).
var anthropicTokenURLs = []string{
	AnthropicTokenURL,
	"https://api.anthropic.com/v1/oauth/token",
	"https://console.anthropic.com/v1/oauth/token",
}

// Provider is one OAuth client: where to log in, where to refresh, and
// what an attempt with its tokens sends upstream.
type Provider struct {
	// Name is the pool the login belongs to, NameAnthropic, NameOpenAI or
	// NameGoogle; it also picks the token endpoint's dialect (JSON at
	// Anthropic, a form at OpenAI and Google).
	Name         string
	AuthorizeURL string
	// TokenURL is tried first for code exchange and refresh; on a
	// connection that could not be made, or a 404, the next of
	// TokenURLs is tried.
	TokenURL  string
	TokenURLs []string // fallbacks after TokenURL; empty for a configured endpoint
	ClientID  string
	// ClientSecret goes in the form of every token request when set:
	// Google's installed-app clients have one, which Google documents as
	// not secret (it ships inside Gemini CLI).
	ClientSecret string
	RedirectURI  string
	// FallbackRedirectURIs are tried in turn when RedirectURI's port is
	// taken; each must be registered with the provider like RedirectURI.
	FallbackRedirectURIs []string
	// PasteRedirectURI, when set, replaces RedirectURI when nothing
	// listens for the callback: a page of the provider's that shows the
	// code for pasting (Gemini CLI's NO_BROWSER login).
	PasteRedirectURI string
	// UserInfoURL, when set, is asked for the account's email after the
	// code exchange, with the new access token (Google's userinfo).
	UserInfoURL string
	Scope       string
	// RefreshScope is sent with a refresh; empty sends none.
	RefreshScope string
	// AuthorizeParams are extra query parameters of the authorize URL.
	AuthorizeParams map[string]string
	// APIBaseURL, when set, is where requests with these tokens go
	// instead of the pool's base_url: the ChatGPT Codex backend, Google's
	// Code Assist.
	APIBaseURL string
}

// Anthropic is the Claude subscription, logged in and refreshed as Claude
// Code does it. tokenURL comes from config
// (providers.anthropic.token_url); "" means the default. The fallback list
// of past endpoints is kept only for the default: an endpoint the user
// chose is the only one used.
func Anthropic(tokenURL string) Provider {
	p := Provider{
		Name: NameAnthropic, AuthorizeURL: AnthropicAuthorizeURL, TokenURL: tokenURL,
		ClientID: AnthropicClientID, RedirectURI: AnthropicRedirectURI,
		Scope: AnthropicScope, RefreshScope: AnthropicScope,
		// code=true makes claude.ai show the code for pasting when the
		// redirect to localhost cannot reach us (CPA anthropic_auth.go).
		AuthorizeParams: map[string]string{"code": "true"},
	}
	if tokenURL == "" || tokenURL == AnthropicTokenURL {
		p.TokenURL = AnthropicTokenURL
		p.TokenURLs = slices.Clone(anthropicTokenURLs[1:])
	}
	return p
}

// OpenAI is the ChatGPT/Codex subscription, logged in and refreshed as
// Codex does it. tokenURL and chatgptBaseURL
// come from config (providers.openai.token_url, chatgpt_base_url); ""
// means the default.
func OpenAI(tokenURL, chatgptBaseURL string) Provider {
	if tokenURL == "" {
		tokenURL = OpenAITokenURL
	}
	if chatgptBaseURL == "" {
		chatgptBaseURL = ChatGPTBaseURL
	}
	return Provider{
		Name: NameOpenAI, AuthorizeURL: OpenAIAuthorizeURL, TokenURL: tokenURL,
		ClientID: OpenAIClientID, RedirectURI: OpenAIRedirectURI,
		FallbackRedirectURIs: []string{OpenAIFallbackRedirectURI},
		// Codex refreshes with no scope: the grant keeps the login's.
		Scope: OpenAIScope,
		AuthorizeParams: map[string]string{
			"id_token_add_organizations": "true", "codex_cli_simplified_flow": "true",
			"originator": OpenAIOriginator,
		},
		APIBaseURL: chatgptBaseURL,
	}
}

func (p Provider) tokenURLs() []string {
	out := []string{p.TokenURL}
	for _, u := range p.TokenURLs {
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// Auth is what one attempt sends with t: exactly what the upstream needs
// for a subscription token, and nothing that claims to be another client
// (no user-agent or originator of Claude Code, Codex or Gemini CLI). The
// proxy has already removed the client's own auth headers; anthropic-beta
// is merged with the client's betas there.
func (p Provider) Auth(t Tokens) auth.Auth {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+t.Access)
	switch p.Name {
	case NameAnthropic:
		h.Set("anthropic-beta", OAuthBeta)
		return auth.Auth{Header: h}
	case NameOpenAI:
		if t.AccountID != "" {
			h.Set("chatgpt-account-id", t.AccountID)
		}
		// The Codex backend answers /responses under its base URL, with
		// no /v1.
		return auth.Auth{Header: h, BaseURL: strings.TrimRight(p.APIBaseURL, "/"), StripV1: p.APIBaseURL != ""}
	case NameGoogle:
		// A Google login is answered by Code Assist, not the Gemini API,
		// and every call names the login's project.
		return auth.Auth{Header: h, BaseURL: strings.TrimRight(p.APIBaseURL, "/"), CodeAssist: true, Project: t.Project}
	}
	return auth.Auth{Header: h}
}
