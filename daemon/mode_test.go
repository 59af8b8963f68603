package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/freeport"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Each mode answers Reload as it can: a served home reads config.toml
// again, a home opened in place says no proxy runs, and the demo says it
// has no file. The demo, keeping nothing, writes no credentials.json.
func TestReloadByMode(t *testing.T) {
	ctx := context.Background()
	up := startSim(t, sim.Options{})

	home, _ := newHome(t, up, "")
	served := startHome(t, home, &logBuf{})
	if res, err := served.Reload(ctx); err != nil || res.Error != "" {
		t.Errorf("served Reload = %+v, %v; want a clean reload", res, err)
	}

	closed, _ := newHome(t, up, "")
	cfg, err := config.Read(filepath.Join(closed, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	inPlace, err := Open(closed, cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer inPlace.Close()
	if _, err := inPlace.Reload(ctx); !errors.Is(err, api.ErrUnsupported) || !strings.Contains(err.Error(), "no proxy is running") {
		t.Errorf("in-place Reload error = %v; want unsupported, no proxy running", err)
	}

	demoCfg := config.Default()
	demoCfg.Listen = freeport.Addr(t)
	dir := t.TempDir()
	demoD := startWith(t, Options{Config: &demoCfg, HistoryHome: dir, Logf: t.Logf})
	if res, err := demoD.Reload(ctx); err != nil || res.Error != "the demo has no config file to reload" {
		t.Errorf("demo Reload = %+v, %v; want the demo's refusal", res, err)
	}
	if _, err := demoD.AddCredential(ctx, api.AddCredential{Provider: "anthropic", Label: "k", Kind: api.KindAPIKey,
		Secret: map[string]string{"key": "sk-demo"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{credentialsFile, stateFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("the demo wrote %s (%v)", name, err)
		}
	}
}
