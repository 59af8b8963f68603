package pprofserve

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// Only a loopback address is listened on (issue 43: the endpoint bound
// whatever it was given).
func TestListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0", "127.0.0.1"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("%s: listened on %s", addr, ln.Addr())
		} else if !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v, want the error to say loopback", addr, err)
		}
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// The profiles are behind the proxy's guard, on a real listener (issue
// 43: Host evil.com was answered).
func TestProfilesAreBehindTheHostGuard(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	get := func(host string, header http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/debug/pprof/goroutine?debug=1", nil)
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("", nil); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("loopback Host: %d %.80q", code, body)
	}
	for _, tc := range []struct {
		host   string
		header http.Header
	}{
		{"evil.com", nil},
		{"evil.com:6060", nil},
		{"", http.Header{"Origin": {"https://evil.com"}}},
		{"", http.Header{"Sec-Fetch-Site": {"cross-site"}}},
	} {
		if code, body := get(tc.host, tc.header); code != http.StatusForbidden || strings.Contains(body, "goroutine") {
			t.Errorf("Host %q %v: %d %.80q, want 403 and no profile", tc.host, tc.header, code, body)
		}
	}
}

// The binary a user runs carries no profiling endpoint: only the pprof
// build links this package.
func TestOnlyThePprofBuildLinksIt(t *testing.T) {
	deps := func(tags string) string {
		out, err := exec.Command("go", "list", "-tags", tags, "-deps", "github.com/subpool/subpool").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		return string(out)
	}
	const self = "github.com/subpool/subpool/internal/pprofserve\n"
	if strings.Contains(deps(""), self) {
		t.Error("the default build links internal/pprofserve")
	}
	if !strings.Contains(deps("pprof"), self) {
		t.Error("the pprof build does not link internal/pprofserve")
	}
}
