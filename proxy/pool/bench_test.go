package pool

import (
	"fmt"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// benchPool is 8 credentials as a busy pool looks: usage reported, one
// cooling, one cooling for the requested model, one paused, a limit on
// concurrent requests.
func benchPool(b *testing.B) *Pool {
	p := New(clock.Real{}, Config{MaxInFlight: 4}, nil)
	for i := range 8 {
		id := fmt.Sprintf("key-%d", i)
		p.Add(Credential{ID: id, Provider: "anthropic", Label: id, Kind: api.KindAPIKey})
		p.SetUtilization(id, &api.Utilization{FiveHour: &api.Window{Used: float64(i%3) / 10}})
	}
	p.CoolDown("key-1", "", ScopeCredential, time.Hour, "429")
	p.CoolDown("key-2", "claude-opus", ScopeModel, time.Hour, "429")
	p.Pause("key-3")
	p.Add(Credential{ID: "o", Provider: "openai"})
	b.ReportAllocs()
	b.ResetTimer()
	return p
}

func BenchmarkPick(b *testing.B) {
	p := benchPool(b)
	req := PickRequest{Provider: "anthropic", Model: "claude-opus"}
	for b.Loop() {
		l, err := p.Pick(req)
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
}

// With a conversation key that is already bound: the common case for
// Claude Code and Codex traffic.
func BenchmarkPickAffinity(b *testing.B) {
	p := benchPool(b)
	req := PickRequest{Provider: "anthropic", Model: "claude-opus", Affinity: "cc:5f0c3a0e-0d7e-4f7e-9a55-0b8f1e7c2d11"}
	for b.Loop() {
		l, err := p.Pick(req)
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
}

func BenchmarkPickParallel(b *testing.B) {
	p := benchPool(b)
	b.RunParallel(func(pb *testing.PB) {
		req := PickRequest{Provider: "anthropic", Model: "claude-opus"}
		for pb.Next() {
			l, err := p.Pick(req)
			if err != nil {
				continue // all at their in-flight limit for a moment
			}
			l.Release()
		}
	})
}
