package admin

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/api"
)

// benchEvents are request_finished events as the proxy emits them, with
// the hub's id and time, varied enough that the encoder sees different
// numbers and strings.
func benchEvents() []api.Event {
	models := []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"}
	creds := []string{"anthropic-7f3a9c21", "anthropic-b04e51d8", "openai-2c9d0e77"}
	evs := make([]api.Event, 64)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range evs {
		evs[i] = api.Event{
			ID: uint64(i + 1), Type: api.EventRequestFinished, Time: at.Add(time.Duration(i) * 1234567 * time.Nanosecond),
			Provider: "anthropic", CredentialID: creds[i%len(creds)], Model: models[i%len(models)],
			Path: "/v1/messages", Status: 200, Class: "ok", Attempts: 1 + i%2,
			LatencyMS: 2000 + int64(i)*137, TTFBMS: 300 + int64(i)*11,
			Client: "default", ClientApp: "claude-code", CredentialKind: api.KindOAuth,
			ServedModel: models[i%len(models)],
			InputTokens: 500 + int64(i)*97, OutputTokens: 100 + int64(i)*41,
			CacheReadTokens: 5000 + int64(i)*1009, CacheWriteTokens: int64(i) * 61,
		}
	}
	return evs
}

// loopbackWS is a websocket over a real loopback connection, its server
// side set up the way serveEvents sets it up. Nothing has been sent on it.
func loopbackWS(tb testing.TB) (server *websocket.Conn, held *heldConn, client *websocket.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	upgraded := make(chan *websocket.Conn, 1)
	held = &heldConn{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		conn, err := up.Upgrade(hijackHeld{w, held}, r, nil)
		if err != nil {
			tb.Error(err)
		}
		upgraded <- conn
	})}
	go srv.Serve(ln)
	client, _, err = websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/", nil)
	if err != nil {
		tb.Fatal(err)
	}
	server = <-upgraded
	tb.Cleanup(func() {
		server.Close()
		client.Close()
		srv.Close()
	})
	return server, held, client
}

// The writer's own encoder must put on the wire exactly what WriteJSON
// did, frame for frame: also for events too big for one frame of the
// connection's buffer, and with what encoding/json escapes.
func TestEventWriterSendsWhatWriteJSONSent(t *testing.T) {
	st := api.Status{Version: "test", Listen: "127.0.0.1:8787", Providers: []api.ProviderStatus{{
		Name: "anthropic", Wire: "anthropic", LimitScope: "credential",
		Credentials: []api.CredentialStatus{{ID: "a1", Provider: "anthropic", Label: "<work> & \u2028", Kind: api.KindAPIKey, State: api.StateReady}},
	}}}
	evs := []api.Event{{ID: 0, Type: api.EventSnapshot, Time: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Snapshot: &st}}
	evs = append(evs, benchEvents()[:3]...)
	for _, n := range []int{4 << 10, 9 << 10, 40 << 10} {
		evs = append(evs, api.Event{ID: uint64(len(evs)), Type: api.EventCooldownStarted, Reason: strings.Repeat("é<", n/3)})
	}

	wire := func(send func(*websocket.Conn, *heldConn) error) []byte {
		server, held, client := loopbackWS(t)
		if err := send(server, held); err != nil {
			t.Fatal(err)
		}
		server.UnderlyingConn().Close()
		client.UnderlyingConn().SetReadDeadline(time.Now().Add(hangGuard))
		b, err := io.ReadAll(client.UnderlyingConn())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := wire(func(conn *websocket.Conn, _ *heldConn) error {
		for _, e := range evs {
			if err := conn.WriteJSON(e); err != nil {
				return err
			}
		}
		return nil
	})
	got := wire(func(conn *websocket.Conn, held *heldConn) error {
		out := newEventWriter(conn, hangGuard)
		if err := out.write(evs[0]); err != nil {
			return err
		}
		more := make(chan api.Event, len(evs))
		for _, e := range evs[2:] {
			more <- e
		}
		return out.writeBatch(held, evs[1], more)
	})
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the writer sent %d bytes, WriteJSON %d; first difference at byte %d", len(got), len(want), i)
	}
}

// BenchmarkWriteBatch is the event websocket's writer: batches of events
// as the hub queues them within batchWait (32 is a proxy at ~3,000
// requests a second), each sent as its own message; batch=1 is a quiet
// proxy, a system call per event. All figures are per event; cpu-ns/op is
// the process's CPU time, which a busy machine disturbs less than ns/op.
func BenchmarkWriteBatch(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			conn, held, client := loopbackWS(b)
			go io.Copy(io.Discard, client.UnderlyingConn())
			out := newEventWriter(conn, 10*time.Second)
			evs := benchEvents()
			more := make(chan api.Event, batch)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; {
				n := min(batch, b.N-i)
				for j := 1; j < n; j++ {
					more <- evs[(i+j)%len(evs)]
				}
				if err := out.writeBatch(held, evs[i%len(evs)], more); err != nil {
					b.Fatal(err)
				}
				i += n
			}
			// Every goroutine's, the peer's reads among them.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
