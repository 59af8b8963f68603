package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// The demo's traffic says what it is (no Claude Code, no Gemini CLI), so
// its simulated Claude and Google logins are opened to every tool and
// serve it; closed again, as the tray's switch does, a login is passed
// over for the demo's requests.
func TestDemoOpensItsLoginsToItsTraffic(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	for _, p := range daemonStatus(d.srv).Providers {
		for _, c := range p.Credentials {
			if want := (c.Provider == "anthropic" || c.Provider == "google") && c.Kind == api.KindOAuth; c.OtherTools != want || (c.OwnTool != "") != want {
				t.Errorf("%s: own tool %q, other tools %v", c.Label, c.OwnTool, c.OtherTools)
			}
		}
	}
	if err := d.srv.Pause(ctx, d.ids["anthropic-key"]); err != nil {
		t.Fatal(err)
	}
	if err := d.srv.Pause(ctx, d.ids["claude-pro"]); err != nil {
		t.Fatal(err)
	}
	ask := func() string {
		return d.send(ctx, "http://"+d.srv.Addr()+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
	}
	if by := ask(); by != d.ids["claude-max"] {
		t.Fatalf("answered by %q, not the opened claude-max", by)
	}
	if err := d.srv.SetOtherTools(ctx, d.ids["claude-max"], false); err != nil {
		t.Fatal(err)
	}
	if by := ask(); by == d.ids["claude-max"] {
		t.Fatal("claude-max, closed to other tools, still served the demo's traffic")
	}
}
