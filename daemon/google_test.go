package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/codeassist"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/proxy/auth"
)

// codeAssist answers loadCodeAssist as Google does for a free-tier account,
// slowly enough that concurrent first uses meet.
func codeAssist(t *testing.T, answer string, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1internal:loadCodeAssist" || r.Header.Get("Authorization") != "Bearer ya29.token" {
			http.Error(w, `{"error":{"code":404}}`, http.StatusNotFound)
			return
		}
		calls.Add(1)
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGoogleProjectIsFoundOncePerLogin(t *testing.T) {
	var calls atomic.Int32
	srv := codeAssist(t, `{"currentTier":{"id":"free-tier","name":"Gemini Code Assist for individuals"},"cloudaicompanionProject":"able-river-123"}`, &calls)
	cp := config.Provider{Name: config.Google, CodeAssistURL: srv.URL}
	a := auth.Auth{Header: http.Header{"Authorization": {"Bearer ya29.token"}}, CodeAssist: true}
	var ps projects
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := ps.project(context.Background(), "google-1", cp, a)
			if err != nil {
				t.Error(err)
			}
			got[i] = p
		}()
	}
	wg.Wait()
	for _, p := range got {
		if p != "able-river-123" {
			t.Fatalf("projects = %v", got)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("loadCodeAssist asked %d times for one login, want 1", n)
	}
	ps.forget("google-1")
	if _, err := ps.project(context.Background(), "google-1", cp, a); err != nil || calls.Load() != 2 {
		t.Errorf("after forget: %v, %d calls", err, calls.Load())
	}
}

// An account Code Assist will not serve without a project of its own is
// the person's to fix: the login is parked with Code Assist's advice.
func TestGoogleProjectRequiredParks(t *testing.T) {
	var calls atomic.Int32
	srv := codeAssist(t, `{"currentTier":{"id":"standard-tier","name":"Gemini Code Assist","userDefinedCloudaicompanionProject":true}}`, &calls)
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	t.Setenv("GOOGLE_CLOUD_PROJECT_ID", "")
	_, err := discoverProject(context.Background(), nil, config.Provider{CodeAssistURL: srv.URL}, "ya29.token")
	if !errors.Is(err, auth.ErrRelogin) || !errors.Is(err, codeassist.ErrProjectRequired) {
		t.Errorf("err = %v; want a relogin carrying ErrProjectRequired", err)
	}
}

func TestGoogleQuotaWindows(t *testing.T) {
	reset := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	q := googleQuota([]codeassist.Bucket{
		{ModelID: "gemini-2.5-pro", TokenType: "REQUESTS", RemainingFraction: 0.25, ResetTime: reset},
		{ModelID: "gemini-2.5-flash", TokenType: "REQUESTS", RemainingFraction: 1},
		{ModelID: "gemini-2.5-flash-lite", TokenType: "REQUESTS", RemainingFraction: 0},
		{ModelID: "gemini-2.5-pro", TokenType: "TOKENS", RemainingFraction: 0.5},
	})
	if len(q.Windows) != 3 {
		t.Fatalf("windows = %+v", q.Windows)
	}
	pro, flash, lite := q.Windows[0], q.Windows[1], q.Windows[2]
	if pro.Name != "1d_gemini-2.5-pro" || pro.Model != "gemini-2.5-pro" || pro.Used != 0.75 || pro.ResetsAt == nil || !pro.ResetsAt.Equal(reset) || pro.Length != 24*time.Hour {
		t.Errorf("pro = %+v", pro)
	}
	if flash.Used != 0 || flash.ResetsAt != nil || flash.Binding {
		t.Errorf("flash = %+v", flash)
	}
	if lite.Status != "rejected" || !lite.Binding {
		t.Errorf("a spent bucket is the binding, rejected one: %+v", lite)
	}
}
