package daemon

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
)

// duplicateOf refuses a credential the home already holds: a label its
// provider already has (then `subpool remove LABEL` could not tell the two
// apart), or an API key already stored under any provider (the same quota
// twice in the pool, counted twice). The error wraps api.ErrConflict and
// names the credential that has it; never the key.
func (c *core) duplicateOf(rec CredentialRecord, secret string, keys keychain.Store) error {
	c.mu.Lock()
	recs := append([]CredentialRecord(nil), c.creds...)
	c.mu.Unlock()
	for _, r := range recs {
		if r.Provider == rec.Provider && strings.EqualFold(r.Label, rec.Label) {
			return fmt.Errorf("%w: %s already has a credential labelled %q: %s; choose another --label, or remove that one first (subpool remove %s)",
				api.ErrConflict, r.Provider, r.Label, r.ID, r.ID)
		}
	}
	if rec.Kind != api.KindAPIKey {
		return nil
	}
	key := secretKeyOf(secret)
	for _, r := range recs {
		if r.Kind != api.KindAPIKey {
			continue
		}
		held, err := keys.Get(SecretKey(r.ID))
		if err == nil && secretKeyOf(held) == key {
			return fmt.Errorf("%w: this key is already stored as %s (%s, %q); nothing added", api.ErrConflict, r.ID, r.Provider, r.Label)
		}
	}
	return nil
}

// secretKeyOf is the API key in a stored secret, or "".
func secretKeyOf(secret string) string {
	var v map[string]string
	if json.Unmarshal([]byte(secret), &v) != nil {
		return ""
	}
	return v["key"]
}
