package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/auth"
)

// A refresh refused for the location it left from is no dead login: it
// is retried, and its message names the setting that cures it.
func TestRefreshRefusedForItsRegionNamesTheProxySetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`))
	}))
	t.Cleanup(srv.Close)
	_, err := refresh(context.Background(), srv.Client(), OpenAI(srv.URL, ""), Tokens{Refresh: "rt"}, time.Now())
	if err == nil || errors.Is(err, auth.ErrRelogin) || !strings.Contains(err.Error(), "set [network] proxy") {
		t.Fatalf("refresh: %v, want a temporary failure naming [network] proxy", err)
	}
}
