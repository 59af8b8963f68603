package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"127.0.0.1:8787", true},
		{"127.0.0.1", true},
		{"127.1.2.3:80", true}, // all of 127/8 is loopback
		{"[::1]:8787", true},
		{"[::1]", true},
		{"::1", true},
		{"localhost:8787", true},
		{"LocalHost", true},
		{"localhost.:8787", true},
		{"[::ffff:127.0.0.1]:8787", true}, // v4 loopback via a dual-stack socket
		{"", false},                       // HTTP/1.0 without Host
		{"evil.example", false},
		{"evil.example:8787", false},
		{"127.0.0.1.evil.example", false}, // a name that merely starts like loopback
		{"localhost.evil.example", false},
		{"0.0.0.0:8787", false},
		{"10.0.0.5:8787", false},
		{"[::]:8787", false},
		{"[fe80::1]:8787", false},
	}
	for _, tt := range tests {
		if got := HostAllowed(tt.host, false); got != tt.want {
			t.Errorf("HostAllowed(%q, false) = %v, want %v", tt.host, got, tt.want)
		}
		// allowRemote lets everything through, including what fails above.
		if !HostAllowed(tt.host, true) {
			t.Errorf("HostAllowed(%q, true) = false, want true", tt.host)
		}
	}
}

func TestBrowser(t *testing.T) {
	allow := []string{"https://ok.example"}
	tests := []struct {
		name    string
		headers map[string]string
		want    bool
	}{
		{"plain program", nil, false},
		{"typed URL", map[string]string{"Sec-Fetch-Site": "none"}, false},
		{"any origin", map[string]string{"Origin": "https://evil.example"}, true},
		{"null origin", map[string]string{"Origin": "null"}, true},
		{"same-host origin", map[string]string{"Origin": "http://127.0.0.1:8787"}, true},
		{"referer", map[string]string{"Referer": "https://evil.example/page"}, true},
		{"fetch metadata only", map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{"same-origin fetch", map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"allow-listed origin", map[string]string{"Origin": "https://ok.example", "Sec-Fetch-Site": "cross-site"}, false},
		{"allow-listed referer", map[string]string{"Referer": "https://ok.example/x?y"}, false},
		// Exact match only: a path or another port is another origin.
		{"near miss origin", map[string]string{"Origin": "https://ok.example:444"}, true},
		{"origin wins over referer", map[string]string{"Origin": "https://evil.example", "Referer": "https://ok.example/"}, true},
		{"unparsable referer", map[string]string{"Referer": "::::"}, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8787/v1/messages", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		if got := Browser(r, allow); got != tt.want {
			t.Errorf("%s: Browser = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A header given twice, or empty, is a web page's: the first value alone
// let an empty Origin before a hostile one pass (issue 43).
func TestBrowserReadsEveryValue(t *testing.T) {
	allow := []string{"https://ok.example"}
	for _, c := range []struct {
		name   string
		header string
		values []string
	}{
		{"empty origin, then a hostile one", "Origin", []string{"", "https://evil.example"}},
		{"empty origin alone", "Origin", []string{""}},
		{"an allowed origin, then a hostile one", "Origin", []string{"https://ok.example", "https://evil.example"}},
		{"the allowed origin twice", "Origin", []string{"https://ok.example", "https://ok.example"}},
		{"empty referer, then a hostile one", "Referer", []string{"", "https://evil.example/page"}},
		{"empty referer alone", "Referer", []string{""}},
		{"an allowed referer, then a hostile one", "Referer", []string{"https://ok.example/", "https://evil.example/"}},
		{"typed, then cross-site", "Sec-Fetch-Site", []string{"none", "cross-site"}},
	} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8787/v1/messages", nil)
		r.Header[c.header] = c.values
		if !Browser(r, allow) {
			t.Errorf("%s: passed the browser check", c.name)
		}
	}
}

func TestCheckCounts(t *testing.T) {
	var n Refusals
	ok := httptest.NewRequest("GET", "http://127.0.0.1:8787/", nil)
	if msg := Check(ok, false, nil, &n); msg != "" {
		t.Fatalf("loopback request refused: %s", msg)
	}
	bad := httptest.NewRequest("GET", "http://evil.example/", nil)
	if Check(bad, false, nil, &n) == "" {
		t.Fatal("foreign Host passed")
	}
	page := httptest.NewRequest("GET", "http://localhost/", nil)
	page.Header.Set("Referer", "https://evil.example/")
	if Check(page, false, nil, &n) == "" {
		t.Fatal("request from a page passed")
	}
	// Host is checked first: a rebinding page sends both, and counts once.
	both := httptest.NewRequest("GET", "http://evil.example/", nil)
	both.Header.Set("Origin", "https://evil.example")
	Check(both, false, nil, &n)
	if h, o := n.Host.Load(), n.Origin.Load(); h != 2 || o != 1 {
		t.Errorf("refusals Host=%d Origin=%d, want 2 and 1", h, o)
	}
	Check(bad, false, nil, nil) // a nil counter is allowed
}

func TestSecurityHeaders(t *testing.T) {
	h := http.Header{}
	SecurityHeaders(h)
	for k, want := range map[string]string{
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestTokenEqual(t *testing.T) {
	tests := []struct {
		got, want string
		ok        bool
	}{
		{"s3cret", "s3cret", true},
		{"s3creT", "s3cret", false},
		{"s3cre", "s3cret", false},
		{"s3crett", "s3cret", false},
		{"", "s3cret", false},
		{"", "", false}, // an unset token opens nothing
		{"x", "", false},
	}
	for _, tt := range tests {
		if got := TokenEqual(tt.got, tt.want); got != tt.ok {
			t.Errorf("TokenEqual(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.ok)
		}
	}
}
