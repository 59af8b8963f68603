package oauth

import (
	"slices"
	"strings"
)

// scopeInference marks a claude.ai login's scopes (Claude Code's check
// before it widens or saves them).
const scopeInference = "user:inference"

// claudeKeptScopes are the scopes of a stored login Claude Code 2.1.337
// keeps when it widens a refresh to its own set: the projects and privacy
// consent grants, which it asks for only at some logins.
var claudeKeptScopes = []string{"user:projects:read", "user:projects:write", "user:privacy_consents:write"}

// claudeRefreshAs is the client_id and scope Claude Code 2.1.337 refreshes
// a stored login with, and the scope it tries once more with when that is
// refused as invalid_scope ("" for none). A login stored with its own
// client refreshes as that client with exactly its stored scopes; one of
// Claude Code's own client, when it is a claude.ai login, with Claude
// Code's scopes (p.RefreshScope) plus the stored ones it keeps, falling
// back to the stored scopes.
func claudeRefreshAs(p Provider, tok Tokens) (client, scope, fallback string) {
	stored := strings.Fields(tok.Scopes)
	own := strings.Join(stored, " ")
	if own == "" {
		own = p.RefreshScope
	}
	if tok.ClientID != "" {
		return tok.ClientID, own, ""
	}
	if !slices.Contains(stored, scopeInference) && tok.Plan == "" {
		return p.ClientID, own, ""
	}
	wide := strings.Fields(p.RefreshScope)
	for _, s := range claudeKeptScopes {
		if slices.Contains(stored, s) && !slices.Contains(wide, s) {
			wide = append(wide, s)
		}
	}
	scope = strings.Join(wide, " ")
	if slices.Contains(stored, scopeInference) && own != scope {
		fallback = own
	}
	return p.ClientID, scope, fallback
}

// withGrantOf takes the client and scopes the CLI's file holds now: the
// file is where Claude Code keeps them, and a login made again there may
// have changed them.
func (t Tokens) withGrantOf(cur Tokens) Tokens {
	if cur.ClientID != "" {
		t.ClientID = cur.ClientID
	}
	if cur.Scopes != "" {
		t.Scopes = cur.Scopes
	}
	return t
}
