package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

func rawPost(t *testing.T, addr, request string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

func TestMalformedChunkedBodyIsA400(t *testing.T) {
	e := newEnv(t, false, func(o *Options, so *simOpts) {
		withGoogle(o, so)
		o.Providers["openai"] = &Provider{Name: "openai", Wire: "openai", Profile: classify.Lookup("openai")}
	})
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	e.geminiKey("g1")
	addr := e.srv.Listener.Addr().String()
	for _, route := range []struct{ path, hdr, shape string }{
		{"/v1/messages", "x-api-key:", `"type":"error"`},
		{"/v1/chat/completions", "Authorization: Bearer", `"error":{"message"`},
		{"/v1beta/models/gemini-2.5-flash:generateContent", "x-goog-api-key:", `"status"`},
	} {
		for name, chunks := range map[string]string{
			"a chunk size that is no number": "zz\r\n{}\r\n0\r\n\r\n",
			"a 10 KB chunk extension":        "2;" + strings.Repeat("e", 10<<10) + "\r\n{}\r\n0\r\n\r\n",
		} {
			req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%s", route.path, route.hdr, testClientKey, chunks)
			status, body := rawPost(t, addr, req)
			if status != http.StatusBadRequest || !strings.Contains(body, route.shape) || !strings.Contains(body, "could not be read") {
				t.Errorf("%s, %s: %d %s", route.path, name, status, body)
			}
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
	for _, ev := range e.rec.of(api.EventRequestFinished) {
		if ev.Status != http.StatusBadRequest || ev.Class != string(classRefused) {
			t.Errorf("request_finished %+v, want a 400 refused", ev)
		}
	}
	// A client that leaves mid-body is still no one to answer.
	c, _ := net.Dial("tcp", addr)
	fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: %s\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"mo", testClientKey)
	c.Close()
}
