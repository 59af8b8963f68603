package daemon

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

// The guard runs before anything looks at the path: a foreign Host gets
// the counted 403 in the provider's shape whatever the path, never a
// redirect from path cleaning (issue 27: "//", "/./" and "/x/../" were
// redirected before the Host guard ran, even with Host: evil.com).
func TestGuardRunsBeforePathCleaning(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	s := startHome(t, home, &logBuf{})
	for _, path := range []string{"//", "/./", "/x/../", "/x/../v1/messages", "//v1/messages", "/subpool/v1/../v1/messages"} {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		// Raw, so that no client cleans the path on the way.
		conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: evil.com\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s with Host evil.com: %d Location=%q", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if n := s.proxy.Refusals().Host.Load(); n < 5 {
		t.Errorf("%d Host refusals counted by the proxy, want every one of its paths", n)
	}
}
