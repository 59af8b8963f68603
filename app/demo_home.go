package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
)

// The demo's home is a folder of its own (a new temp folder, or --home),
// never the user's: it holds what a verb needs to find the running demo
// (config.toml with the address, admin-token) and the demo's made-up
// secrets in a file keychain, so `SUBPOOL_HOME=… subpool list` (or env,
// events, usage, history, login, the tray) reaches the demo through its
// admin API as it would reach `subpool serve`. The demo removes what it
// wrote when it stops.

// demoHomeMark opens the config.toml a demo writes; a folder whose
// config.toml does not open with it is someone's real home, and the demo
// refuses it.
const demoHomeMark = "# subpool demo home: written by `subpool demo`, removed when it stops."

// demoHomeFiles are the files a demo (its daemon, its history, a verb run
// on it) leaves in its home; only these are removed, never the folder of
// a --home that existed before.
var demoHomeFiles = []string{config.FileName, "admin-token", keychain.SecretsFile, keychain.SecretsFile + ".lock",
	"history.db", "history.db-wal", "history.db-shm", "subpool.lock", "state.json", "credentials.json", "clients.json"}

// demoHome is the folder a demo lives in.
type demoHome struct {
	dir     string
	created bool // made by the demo: removed whole
}

// openDemoHome claims dir for the demo, or a new temp folder when dir is
// "". A folder that holds anything but an earlier demo's files is refused.
func openDemoHome(dir string) (*demoHome, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", demoTempPrefix)
		if err != nil {
			return nil, fmt.Errorf("cannot make a folder for the demo: %v", err)
		}
		return &demoHome{dir: d, created: true}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--home %q: %v", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("cannot create %s: %v", abs, err)
		}
		return &demoHome{dir: abs, created: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--home: %v", err)
	}
	if len(entries) > 0 && !isDemoHome(abs) {
		return nil, fmt.Errorf("%s is not empty and is not a demo's home; the demo keeps nothing of yours, so give it an empty or new folder (or leave out --home)", abs)
	}
	if demoRunsIn(abs) {
		return nil, fmt.Errorf("a demo already runs on %s; use that one, or give this one another --home", abs)
	}
	h := &demoHome{dir: abs}
	h.clear() // an earlier demo that was killed left its files
	return h, nil
}

func isDemoHome(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, config.FileName))
	return err == nil && strings.HasPrefix(string(b), demoHomeMark)
}

// demoTempPrefix names the temp folders demos make.
const demoTempPrefix = "subpool-demo-"

// isGoneDemoHome reports whether home is a temp folder a demo made and
// removed when it stopped: a shell that still exports it would otherwise
// get a new empty home.
func isGoneDemoHome(home string) bool {
	if filepath.Dir(home) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(home), demoTempPrefix) {
		return false
	}
	_, err := os.Stat(home)
	return errors.Is(err, fs.ErrNotExist)
}

// demoStopped is the error for a demo's home that no demo serves now.
func demoStopped(home string) error {
	return fmt.Errorf("the demo that used %s is not running any more; start `subpool demo` again and use the SUBPOOL_HOME it prints, or `unset SUBPOOL_HOME` for your own home", home)
}

// demoRunsIn reports whether a demo answers on the demo home dir.
func demoRunsIn(dir string) bool {
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := runningClient(ctx, dir, cfg)
	return c != nil || err != nil
}

// keys is the demo's keychain: a file in its own home, so a verb of
// another process can read a client key as it does on a real home.
func (h *demoHome) keys() (keychain.Store, error) {
	return keychain.NewFile(filepath.Join(h.dir, keychain.SecretsFile))
}

// publish writes what a verb reads to find the demo: its config (the
// address it really listens on, the file keychain, the simulated
// providers, so a `subpool login` in that shell also goes to the sim) and
// its admin token.
func (h *demoHome) publish(cfg config.Config, addr, adminToken string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nlisten = %q\n\n[keychain]\nbackend = %q\n", demoHomeMark, addr, keychain.BackendFile)
	for _, name := range []string{config.Anthropic, config.OpenAI, config.Google} {
		p := cfg.Providers[name]
		fmt.Fprintf(&b, "\n[providers.%s]\n", name)
		for _, kv := range [][2]string{{"base_url", p.BaseURL}, {"chatgpt_base_url", p.ChatGPTBaseURL}, {"code_assist_url", p.CodeAssistURL},
			{"token_url", p.TokenURL}, {"authorize_url", p.AuthorizeURL}, {"usage_url", p.UsageURL}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
			}
		}
	}
	if err := os.WriteFile(filepath.Join(h.dir, config.FileName), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("cannot write the demo's config: %v", err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "admin-token"), []byte(adminToken+"\n"), 0o600); err != nil {
		return fmt.Errorf("cannot write the demo's admin token: %v", err)
	}
	return nil
}

// clear removes what the demo wrote; a folder the demo made goes whole.
func (h *demoHome) clear() {
	for _, name := range demoHomeFiles {
		os.Remove(filepath.Join(h.dir, name))
	}
}

func (h *demoHome) Close() {
	if h.created {
		os.RemoveAll(h.dir)
		return
	}
	h.clear()
}
