package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The demo's Gemini: a Google login serving Gemini API requests through
// Code Assist under its own project, its day under way on two per-model
// meters, its access token renewed at the sim's Google token endpoint when
// refused; and a Gemini API key beside it.
func TestDemoServesGemini(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	login, key := d.ids["google-ai-pro"], d.ids["gemini-key"]
	sub, _ := d.srv.Hub().Subscribe(0, 4096)
	defer sub.Close()
	ask := func() string {
		t.Helper()
		return d.send(ctx, "http://"+d.srv.Addr()+demoGemini.path, demoGemini.body)
	}

	if err := d.srv.Pause(ctx, key); err != nil {
		t.Fatal(err)
	}
	if by := ask(); by != login {
		t.Fatalf("answered by %q, not the Google login %s", by, login)
	}

	// Its day shows as Code Assist reports it: the morning's use and the
	// answer just given, one bar per model. (A poll made before that
	// answer may come first.)
	percent := func(ws []api.Window) map[string]int {
		p := map[string]int{}
		for _, w := range ws {
			p[w.Name] = int(math.Round(w.Used * 100))
		}
		return p
	}
	want := map[string]int{"1d_gemini-2.5-pro": 9, "1d_gemini-2.5-flash": 39}
	for seen := map[string]int(nil); !maps.Equal(seen, want); {
		select {
		case ev := <-sub.C():
			if ev.Type != api.EventUsageUpdated || ev.CredentialID != login {
				continue
			}
			if seen = percent(ev.Windows); !maps.Equal(seen, want) && seen["1d_gemini-2.5-flash"] != 38 {
				t.Fatalf("windows %+v, want %v", ev.Windows, want)
			}
		case <-ctx.Done():
			t.Fatalf("the Google login's usage never showed %v", want)
		}
	}

	// Google stops taking the access token: the login renews it with its
	// refresh token and serves on.
	access, _ := d.secret("google-ai-pro")
	d.oauth.ExpireAccess(access)
	if by := ask(); by != login {
		t.Fatalf("after its token expired, answered by %q", by)
	}
	if now, _ := d.secret("google-ai-pro"); now == access || now == "" {
		t.Fatal("the access token was not renewed")
	}
	if lr, ok := d.oauth.LastRefresh(); !ok || lr.Provider != sim.Google || d.oauth.Stats().Rotations != 1 {
		t.Fatalf("the renewal did not go through the sim's Google token endpoint: %+v %+v", lr, d.oauth.Stats())
	}

	// The key serves Gemini as well.
	if err := d.srv.Resume(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := d.srv.Pause(ctx, login); err != nil {
		t.Fatal(err)
	}
	if by := ask(); by != key {
		t.Fatalf("answered by %q, not the Gemini key %s", by, key)
	}
}
