package daemon

import (
	"fmt"

	"github.com/subpool/subpool/proxy/api"
)

// resume is Resume: it undoes a pause, and says so when
// the credential still cannot serve because it is parked for a login,
// which only a new login (or key) clears (issue 43: resume answered 204
// and left it parked, so the person thought it was back). The pause is
// undone either way, so the login puts it straight back to work.
func (c *core) resume(id string) error {
	if err := c.poolOp(id, c.pool.Resume); err != nil {
		return err
	}
	for _, st := range c.pool.Status("") {
		if st.ID != id {
			continue
		}
		for _, pk := range st.Parks {
			if pk.Kind == api.ParkRelogin {
				return conflict(reloginAdvice(st))
			}
		}
	}
	return nil
}

// reloginAdvice says what clears a re-login park, as the person acts on
// it: a new login, a login in the CLI it was imported from, or for a
// refused key a new key.
func reloginAdvice(st api.CredentialStatus) string {
	switch {
	case st.Kind == api.KindAPIKey:
		return fmt.Sprintf("%s was refused by %s: add a new key (subpool add-key %s --label NAME) and remove this one (subpool remove %s)", st.ID, st.Provider, st.Provider, st.ID)
	case st.Source != "":
		return fmt.Sprintf("%s needs a login: log in again in %s, then run subpool import %s", st.ID, st.Source, st.Source)
	}
	return fmt.Sprintf("%s needs a login: run subpool login %s", st.ID, st.Provider)
}

// conflict is an api.ErrConflict that reads as its advice alone: the CLI
// prints it after "subpool resume:", the admin API in its error body.
type conflict string

func (c conflict) Error() string { return string(c) }
func (c conflict) Unwrap() error { return api.ErrConflict }
