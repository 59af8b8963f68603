//go:build unix

package daemon

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/proxy/api"
)

// chanEmitter hands events to a channel.
type chanEmitter chan api.Event

func (c chanEmitter) Emit(e api.Event) { c <- e }

// SIGHUP reloads. The reloader watches no folder, so the signal is the
// only way it can hear of anything.
func TestSIGHUPReloads(t *testing.T) {
	events := make(chanEmitter, 4)
	logs := &logBuf{}
	r := &reloader{path: filepath.Join(t.TempDir(), "config.toml"), live: &liveConfig{}, events: events,
		logf: logs.logf, apply: func(config.Config) {}}
	cfg := config.Default()
	cfg.Ladder = []time.Duration{time.Minute}
	r.live.store(cfg)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.watch(ctx, hup, nil)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Skip("no SIGHUP here:", err)
	}
	ev := <-events
	if ev.Type != api.EventConfigReloaded || !strings.Contains(ev.Reason, "cooldown.ladder") || !strings.Contains(logs.String(), "(SIGHUP)") {
		t.Fatalf("%+v; log %q", ev, logs.String())
	}
}
