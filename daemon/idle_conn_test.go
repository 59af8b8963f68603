package daemon

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// A kept-alive connection serves request after request, and one left idle
// is closed by the server (issue 27: idle keep-alives had no deadline).
// Real time and the served timeout, not a shortened one: the server is
// the one `subpool serve` runs, whose code the bench's 256-stream series
// are pooled by, so it stays as served; parallel, so the wait overlaps
// the package's other tests.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	t.Parallel()
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	s := startHome(t, home, &logBuf{})

	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range 2 {
		if _, err := conn.Write([]byte("GET /no-such-route HTTP/1.1\r\nHost: " + s.addr + "\r\n\r\n")); err != nil {
			t.Fatalf("request %d on the kept-alive connection: %v", i+1, err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("request %d on the kept-alive connection: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("request %d: the server closes the connection after answering %d", i+1, resp.StatusCode)
		}
	}
	idle := s.http.IdleTimeout
	if idle <= 0 {
		t.Fatalf("the server sets no idle timeout (%v)", idle)
	}
	conn.SetReadDeadline(time.Now().Add(2 * idle)) // hang guard
	start := time.Now()
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("an idle connection: read %v, want the server to close it", err)
	}
	t.Logf("closed after %v idle", time.Since(start).Round(time.Millisecond))
}
