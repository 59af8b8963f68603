package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/pool"
)

// errLocked: another subpool process holds the home.
var errLocked = errors.New("home is locked by another subpool process")

// CredentialRecord is a credential's metadata: everything but its secret,
// which lives in the keychain under SecretKey(ID).
type CredentialRecord struct {
	ID       string    `json:"id"`
	Provider string    `json:"provider"`
	Label    string    `json:"label"`
	Kind     string    `json:"kind"`
	Source   string    `json:"source,omitempty"`
	Added    time.Time `json:"added"`
	// OtherTools: the person opened this subscription login to every
	// tool, not only its own (subpool tools ID all). A choice about the
	// credential, like its label, so it is kept here, not in the state
	// file, whose damage must not undo it.
	OtherTools bool `json:"other_tools,omitempty"`
	// Proxy is the credential's own egress proxy (add-key/login
	// --proxy), overriding [network] proxy. Not a secret to the keychain,
	// but it may hold user:password: shown only through egress.Redact.
	Proxy string `json:"proxy,omitempty"`
}

// credDoc is credentials.json: which credentials exist. It changes only
// when the user adds or removes one, apart from the state file, which
// changes on every cooldown: damage to one never costs the other.
type credDoc struct {
	Version     int                `json:"version"`
	Credentials []CredentialRecord `json:"credentials"`
}

// stateDoc is the state file: the pool's cooldowns, ladder steps, parks
// and pauses. Counters are not kept.
type stateDoc struct {
	Version int        `json:"version"`
	Pool    pool.State `json:"pool"`
}

const stateVersion = 1

// files is where a core keeps credentials.json and the state file: the
// home's (stateStore), or nowhere (noFiles).
type files interface {
	loadCreds() ([]CredentialRecord, error)
	saveCreds([]CredentialRecord) error
	load() stateDoc
	save(stateDoc) error
}

// noFiles keeps nothing: the demo's credentials and state live and end
// with it. Its empty state is the zero one, which the pool restores as
// "no state file yet".
type noFiles struct{}

func (noFiles) loadCreds() ([]CredentialRecord, error) { return nil, nil }
func (noFiles) saveCreds([]CredentialRecord) error     { return nil }
func (noFiles) load() stateDoc                         { return stateDoc{} }
func (noFiles) save(stateDoc) error                    { return nil }

// stateStore owns the two files. One process writes them at a time: the
// running proxy, or a CLI verb that took the home's lock because no proxy
// answers.
type stateStore struct {
	path  string
	creds string
	logf  func(string, ...any)
	mu    sync.Mutex
}

func newStateStore(home string, logf func(string, ...any)) *stateStore {
	if logf == nil {
		logf = log.Printf
	}
	return &stateStore{path: filepath.Join(home, stateFile), creds: filepath.Join(home, credentialsFile), logf: logf}
}

// loadCreds reads credentials.json. Unlike the state file, an unreadable
// one is an error: starting without the user's credentials would look
// like they were deleted.
func (s *stateStore) loadCreds() ([]CredentialRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.creds)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", s.creds, err)
	}
	var d credDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v); fix or remove it, then add the credentials again", s.creds, err)
	}
	return d.Credentials, nil
}

func (s *stateStore) saveCreds(recs []CredentialRecord) error {
	b, err := json.MarshalIndent(credDoc{Version: stateVersion, Credentials: recs}, "", "  ")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFileAtomic(s.creds, append(b, '\n'), 0o600)
}

// ReadCredentials returns the records of a home's credentials.json, none
// if it has none.
func ReadCredentials(home string) ([]CredentialRecord, error) {
	return newStateStore(home, nil).loadCreds()
}

// WriteCredentials replaces a home's credentials.json with recs, as a past
// `subpool login` would have left it. It takes no lock: the home must be
// one no process holds.
func WriteCredentials(home string, recs []CredentialRecord) error {
	return newStateStore(home, nil).saveCreds(recs)
}

// load reads the state file. One that is corrupt, or valid JSON this
// build does not understand (null, another version), is moved aside with a
// one-line warning naming it, and an empty state is returned: losing
// cooldowns is better than a proxy that will not start, and moving it
// aside keeps it from being overwritten unseen on stop.
func (s *stateStore) load() stateDoc {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return stateDoc{Version: stateVersion}
	}
	var d stateDoc
	if err == nil {
		err = parseState(b, &d)
	}
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%s", s.path, time.Now().UTC().Format("20060102T150405Z"))
		if rerr := os.Rename(s.path, aside); rerr != nil {
			s.logf("warning: state file %s is unreadable (%v) and could not be moved aside (%v); starting with empty state", s.path, err, rerr)
		} else {
			s.logf("warning: state file %s was unreadable (%v); moved it to %s and started with no cooldowns", s.path, err, aside)
		}
		return stateDoc{Version: stateVersion}
	}
	return d
}

// parseState reads a state file and says what it cannot understand.
func parseState(b []byte, d *stateDoc) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe == nil {
		return errors.New("it holds no state object")
	}
	if err := json.Unmarshal(b, d); err != nil {
		return err
	}
	if d.Version != stateVersion {
		return fmt.Errorf("version %d, which this build does not read (it reads %d)", d.Version, stateVersion)
	}
	if v := d.Pool.Version; v != 0 && v != pool.StateVersion {
		return fmt.Errorf("pool state version %d, which this build does not read (it reads %d)", v, pool.StateVersion)
	}
	return nil
}

func (s *stateStore) save(d stateDoc) error {
	d.Version = stateVersion
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFileAtomic(s.path, append(b, '\n'), 0o600)
}
