package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestDuplicateOriginIsRefused(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	for _, h := range []string{"Origin", "Referer"} {
		for _, vs := range [][]string{{"", "https://evil.example"}, {""}} {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/messages", strings.NewReader(msgBody))
			req.Header.Set("x-api-key", testClientKey)
			req.Header[h] = vs
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %q: %d", h, vs, resp.StatusCode)
			}
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
}
