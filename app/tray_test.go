package app

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/admin/client"
)

// With no proxy running the tray starts one in-process and it serves; with
// one running, the tray connects to it and starts none.
func TestTrayStartsOrFindsTheProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	ctx := context.Background()
	cfg, err := config.Load(home + "/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}

	tgt, sup, err := trayConnect(ctx, home, cfg, true, logs.logf)
	if err != nil {
		t.Fatal(err)
	}
	if sup == nil || tgt.addr != addr {
		t.Fatalf("no in-process proxy started: %+v", tgt)
	}
	resp, body := proxyPost(t, sup.current(), "/v1/messages", `{"model":"m","messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("in-process proxy: %d %s", resp.StatusCode, body)
	}
	c := &client.Client{Addr: tgt.addr, Token: tgt.token}
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("the tray's client cannot reach its proxy: %v", err)
	}

	// A second tray finds the first one's proxy and starts nothing.
	tgt2, sup2, err := trayConnect(ctx, home, cfg, true, logs.logf)
	if err != nil {
		t.Fatal(err)
	}
	if sup2 != nil || tgt2.addr != addr || tgt2.token != tgt.token || tgt2.clientKey != tgt.clientKey {
		t.Fatalf("second tray: sup=%v target=%+v", sup2, tgt2)
	}
	sup.stop()
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Fatal("proxy still answering after stop")
	}
}

// The supervisor restarts an in-process proxy whose listener died.
func TestSupervisorRestartsProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	logs := &logBuf{}
	var lns []net.Listener
	var mu sync.Mutex
	capture := func(ln net.Listener) net.Listener { mu.Lock(); lns = append(lns, ln); mu.Unlock(); return ln }
	sup, err := superviseServer(context.Background(), daemon.Options{Home: home, Logf: logs.logf, WrapListener: capture})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.stop()
	first := sup.current()
	mu.Lock()
	lns[0].Close() // the listener dies under the server
	mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for sup.current() == first {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted; log: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := &client.Client{Addr: sup.current().Addr(), Token: sup.current().AdminToken()}
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatalf("restarted proxy does not answer: %v", err)
	}
}
