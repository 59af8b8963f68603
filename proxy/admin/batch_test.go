package admin_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// The writer sends a burst in few socket writes, yet the client still
// gets one websocket message per event, in id order, none lost: here a
// burst several times the size the writer holds before spilling.
func TestEventsBurstArrivesOneMessagePerEvent(t *testing.T) {
	const burst = 400
	e := newEnv(t, burst, func(o *admin.Options) { o.QueueSize = burst })
	c, _ := e.dial(t, "")
	readEvent(t, c) // snapshot: the server's writer is now in its loop
	for i := range burst {
		e.hub.Emit(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", CredentialID: "a1",
			Reason: strings.Repeat("x", i%300)})
	}
	c.SetReadDeadline(time.Now().Add(hangGuard))
	for want := uint64(1); want <= burst; want++ {
		kind, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("reading event %d: %v", want, err)
		}
		var ev api.Event
		// Unmarshal refuses trailing data: two events in one message fail.
		if err := json.Unmarshal(msg, &ev); kind != websocket.TextMessage || err != nil {
			t.Fatalf("message %d (type %d) is not one event: %v", want, kind, err)
		}
		if ev.ID != want || len(ev.Reason) != int(want-1)%300 {
			t.Fatalf("got id %d with a %d-byte reason, want id %d", ev.ID, len(ev.Reason), want)
		}
	}
	if subs, dropped := e.hub.Stats(); subs != 1 || dropped != 0 {
		t.Errorf("Stats = %d subscribers, %d dropped; want 1, 0", subs, dropped)
	}
}
