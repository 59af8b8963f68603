package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/egress"
	"github.com/subpool/subpool/proxy/api"
)

// `subpool list` shows a PROXY column once a credential has a proxy of
// its own, as status carries it (scheme://host:port, no password), and a
// region park in words that name the setting. Without one, no column.
func TestListShowsProxiesAndRegionParks(t *testing.T) {
	now := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	st := api.Status{Now: now, Providers: []api.ProviderStatus{{Name: "openai", Credentials: []api.CredentialStatus{
		{ID: "openai-1", Provider: "openai", Label: "home", Kind: api.KindAPIKey, State: api.StateParked,
			Parks: []api.Park{{Kind: api.ParkRegion, Reason: "403 unsupported_country_region_territory"}}},
		{ID: "openai-2", Provider: "openai", Label: "away", Kind: api.KindAPIKey, State: api.StateReady,
			Proxy: egress.Redact("socks5://me:s3cret@10.0.0.7:1080")},
	}}}}
	var out bytes.Buffer
	printTable(&out, st)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "PROXY") {
		t.Fatalf("header %q, want a PROXY column", lines[0])
	}
	if !strings.Contains(lines[1], "parked: region refused (set [network] proxy)") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "-") {
		t.Errorf("region-parked row %q", lines[1])
	}
	if !strings.HasSuffix(strings.TrimSpace(lines[2]), "socks5://10.0.0.7:1080") || strings.Contains(out.String(), "s3cret") {
		t.Errorf("proxied row %q", lines[2])
	}

	st.Providers[0].Credentials[1].Proxy = ""
	out.Reset()
	printTable(&out, st)
	if strings.Contains(out.String(), "PROXY") {
		t.Errorf("a PROXY column with no proxy to show:\n%s", out.String())
	}
}

// subpool classify names the region class as the proxy acts on it.
func TestClassifyRegionRefusal(t *testing.T) {
	body := `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`
	code, out, errOut := runClassify(t, body, "--provider", "openai", "--status", "403", "--body", "-")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, `{"class":"region_blocked","scope":"provider","retry_after_ms":0,`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
