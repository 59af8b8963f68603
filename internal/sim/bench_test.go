package sim

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The sim's own cost per answer, without the network: what it adds to
// every benchmark that runs through it.
func BenchmarkServe(b *testing.B) {
	for _, tc := range []struct{ name, path, cred, body string }{
		{"messages/json", "/v1/messages", keyA, messagesBody},
		{"messages/sse", "/v1/messages", keyA, streaming(messagesBody)},
		{"responses/sse", "/v1/responses", keyO, streaming(responseBody)},
		{"chat/json", "/v1/chat/completions", keyO, chatBody},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := New(Options{DiscardBodies: true})
			defer s.Close()
			for b.Loop() {
				req := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer "+tc.cred)
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
