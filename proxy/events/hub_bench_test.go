package events

import (
	"testing"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

func benchEvent(i int) api.Event {
	return api.Event{
		Type: api.EventRequestFinished, Provider: "anthropic", CredentialID: "anthropic-7f3a9c21",
		Model: "claude-sonnet-4-5-20250929", Path: "/v1/messages", Status: 200, Class: "ok", Attempts: 1,
		LatencyMS: 2000 + int64(i%1000), TTFBMS: 345, Client: "default", ClientApp: "claude-code",
		CredentialKind: api.KindOAuth, ServedModel: "claude-sonnet-4-5-20250929",
		InputTokens: 1234, OutputTokens: 567, CacheReadTokens: 45678, CacheWriteTokens: 890,
	}
}

// BenchmarkEmit is Emit on the request path with one live subscriber, the
// tray. The subscriber takes events in batches, as the admin writer does
// after its gather wait; here the same goroutine drains, so the cost of
// waking a reader (once per batch in the proxy) is left out, and a reader
// descheduled on a busy machine cannot get dropped. ns/op and allocs/op
// are per event.
func BenchmarkEmit(b *testing.B) {
	const batch = 32
	h := NewHub(clock.Real{}, 0)
	s, _ := h.Subscribe(0, DefaultQueue)
	defer s.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Emit(benchEvent(i))
		if i%batch == batch-1 {
			for range batch {
				<-s.C()
			}
		}
	}
}
