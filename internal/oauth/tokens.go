package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tokens is one login. Access, Refresh and IDToken are secrets: they live
// in the keychain (see Secret) and never in a message, log or event.
type Tokens struct {
	Access    string
	Refresh   string
	IDToken   string // ChatGPT, Google: a JWT with the account's claims
	AccountID string // ChatGPT: chatgpt_account_id, sent as chatgpt-account-id
	// ExpiresAt is the access token's expiry; zero when unknown, and then
	// the token is refreshed only when an upstream refuses it.
	ExpiresAt time.Time
	// Email and Plan name the account for a label, when the provider says.
	Email string
	Plan  string
	// Project is the Google Cloud project Code Assist serves a Google
	// login under (internal/codeassist finds it, as Gemini CLI does at
	// login); "" for the other providers.
	Project string
	// ClientID and Scopes are what the Claude login was granted under, as
	// Claude Code 2.1.337 stores them in .credentials.json and refreshes
	// with: an OAuth client other than its own (CLAUDE_CODE_OAUTH_CLIENT_ID)
	// and the granted scopes, space-separated. "" when unknown.
	ClientID string
	Scopes   string
	// Source is the CLI file (or macOS keychain item) an imported login
	// came from and is kept in step with; zero for subpool's own logins.
	Source Source
}

// Keys of the keychain secret (api.AddCredential's oauth shape).
const (
	keyAccess         = "access_token"
	keyRefresh        = "refresh_token"
	keyExpires        = "expires_at"
	keyIDToken        = "id_token"
	keyAccount        = "account_id"
	keyEmail          = "email"
	keyPlan           = "plan"
	keyProject        = "project"
	keyClientID       = "client_id"
	keyScopes         = "scopes"
	keySource         = "source"
	keySourcePath     = "source_path"
	keySourceKeychain = "source_keychain"
	keySourceDir      = "source_dir"
)

// Secret is t as the keychain secret api.AddCredential carries: only the
// fields that are set. The keychain package splits a large one (the
// ChatGPT id token) into items every OS accepts.
func (t Tokens) Secret() map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set(keyAccess, t.Access)
	set(keyRefresh, t.Refresh)
	if !t.ExpiresAt.IsZero() {
		m[keyExpires] = t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	set(keyIDToken, t.IDToken)
	set(keyAccount, t.AccountID)
	set(keyEmail, t.Email)
	set(keyPlan, t.Plan)
	set(keyProject, t.Project)
	set(keyClientID, t.ClientID)
	set(keyScopes, t.Scopes)
	set(keySource, t.Source.Kind)
	set(keySourcePath, t.Source.Path)
	set(keySourceKeychain, t.Source.Keychain)
	set(keySourceDir, t.Source.Dir)
	return m
}

// FromSecret reads a keychain secret written by Secret (or given to
// api.AddCredential by a script). The error names the bad key, never a
// value.
func FromSecret(m map[string]string) (Tokens, error) {
	t := Tokens{
		Access: m[keyAccess], Refresh: m[keyRefresh], IDToken: m[keyIDToken], AccountID: m[keyAccount],
		Email: m[keyEmail], Plan: m[keyPlan], Project: m[keyProject], ClientID: m[keyClientID], Scopes: m[keyScopes],
		Source: Source{Kind: m[keySource], Path: m[keySourcePath], Keychain: m[keySourceKeychain], Dir: m[keySourceDir]},
	}
	if t.Access == "" && t.Refresh == "" {
		return Tokens{}, errors.New("the login has neither access_token nor refresh_token")
	}
	if s := m[keyExpires]; s != "" {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return Tokens{}, fmt.Errorf("expires_at is not an RFC 3339 time")
		}
		t.ExpiresAt = at
	}
	t.fillFromJWTs()
	return t, nil
}

// fillFromJWTs takes what the JWTs tell and the fields lack: the ChatGPT
// account, email and plan from the id token, and an expiry from the
// access token when it is a JWT (ChatGPT's are; Claude's are opaque).
func (t *Tokens) fillFromJWTs() {
	if c, ok := parseJWT(t.IDToken); ok {
		if t.AccountID == "" {
			t.AccountID = c.Auth.AccountID
		}
		if t.Email == "" {
			t.Email = c.Email
		}
		if t.Plan == "" {
			t.Plan = c.Auth.PlanType
		}
	}
	if c, ok := parseJWT(t.Access); ok {
		if t.ExpiresAt.IsZero() && c.Exp > 0 {
			t.ExpiresAt = time.Unix(c.Exp, 0).UTC()
		}
		if t.AccountID == "" {
			t.AccountID = c.Auth.AccountID
		}
		if t.Email == "" {
			t.Email = c.Profile.Email
		}
	}
}

// claims is the part of a ChatGPT JWT subpool reads.
type claims struct {
	Exp   int64  `json:"exp"`
	Email string `json:"email"`
	Auth  struct {
		AccountID string `json:"chatgpt_account_id"`
		PlanType  string `json:"chatgpt_plan_type"`
	} `json:"https://api.openai.com/auth"`
	Profile struct {
		Email string `json:"email"`
	} `json:"https://api.openai.com/profile"`
}

// parseJWT decodes a JWT's payload without checking its signature: subpool
// only reads what its own login was told, and the upstream checks the
// token itself on every request.
func parseJWT(tok string) (claims, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return claims{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return claims{}, false
	}
	var c claims
	if json.Unmarshal(b, &c) != nil {
		return claims{}, false
	}
	return c, true
}

// Label is a name for the login a person recognises: the account's email
// and plan as far as known, else the provider; at most 64 characters,
// the limit of a credential's label.
func (t Tokens) Label(provider string) string {
	s := provider
	switch {
	case t.Email != "" && t.Plan != "":
		s = t.Email + " (" + t.Plan + ")"
	case t.Email != "":
		s = t.Email
	case t.Plan != "":
		s = provider + " " + t.Plan
	}
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	return s
}

// merge returns t updated by a token answer n: a field n lacks keeps its
// old value (a refresh that returns no refresh token means the old one
// still holds, protocols.md).
func (t Tokens) merge(n Tokens) Tokens {
	out := t
	if n.Access != "" {
		out.Access = n.Access
		// A new access token's expiry replaces the old even when unknown.
		out.ExpiresAt = n.ExpiresAt
	}
	if n.Refresh != "" {
		out.Refresh = n.Refresh
	}
	if n.IDToken != "" {
		out.IDToken = n.IDToken
	}
	if n.AccountID != "" {
		out.AccountID = n.AccountID
	}
	if n.Email != "" {
		out.Email = n.Email
	}
	if n.Plan != "" {
		out.Plan = n.Plan
	}
	if n.Project != "" {
		out.Project = n.Project
	}
	if n.ClientID != "" {
		out.ClientID = n.ClientID
	}
	if n.Scopes != "" {
		out.Scopes = n.Scopes
	}
	return out
}
