package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

var streamRoutes = []struct {
	path, cred, body string
	delta            string // the event name of a content delta ("" for chat)
}{
	{"/v1/messages", keyA, streaming(messagesBody), "content_block_delta"},
	{"/v1/responses", keyO, streaming(responseBody), "response.output_text.delta"},
	{"/backend-api/codex/responses", keyO, streaming(responseBody), "response.output_text.delta"},
	{"/v1/chat/completions", keyO, streaming(chatBody), ""},
}

// countDeltas counts content deltas; on chat, the chunks whose delta
// carries non-empty content.
func countDeltas(evs []event, deltaName string) int {
	n := 0
	for _, ev := range evs {
		if deltaName != "" && ev.Name == deltaName ||
			deltaName == "" && strings.Contains(string(ev.Data), `"content":"hello `) {
			n++
		}
	}
	return n
}

// The sim writes event i only after the client has read event i-1: a
// buffered stream would deadlock here (and the guard would fail the test)
// instead of passing.
func TestEventsLeaveOneByOne(t *testing.T) {
	for _, tc := range streamRoutes {
		t.Run(tc.path, func(t *testing.T) {
			read := make(chan int, 64)
			s := start(t, Options{BeforeEvent: func(ctx context.Context, ev Event) error {
				if ev.Index == 0 {
					return nil
				}
				select {
				case got := <-read:
					if got != ev.Index-1 {
						return fmt.Errorf("client read event %d, sim is about to send %d", got, ev.Index)
					}
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
			resp := call(t, guard(t), s, "POST", tc.path, tc.cred, tc.body)
			defer resp.Body.Close()
			er := newEventReader(resp.Body)
			n := 0
			for {
				_, err := er.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d events: %v", n, err)
				}
				read <- n
				n++
			}
			if n < 8 {
				t.Errorf("only %d events", n)
			}
		})
	}
}

// BeforeEvent sees each event's name and position, which is what lets a
// test hold a stream at a chosen point.
func TestBeforeEventSeesEachEvent(t *testing.T) {
	var seen []string
	s := start(t, Options{Chunks: 1, BeforeEvent: func(_ context.Context, ev Event) error {
		if ev.Index != len(seen) || ev.Credential != keyA || ev.Path != "/v1/messages" {
			return fmt.Errorf("event %+v after %d", ev, len(seen))
		}
		seen = append(seen, ev.Name)
		return nil
	}})
	resp := call(t, guard(t), s, "POST", "/v1/messages", keyA, streaming(messagesBody))
	evs := events(t, resp.Body)
	resp.Body.Close()
	if !slices.Equal(seen, names(evs)) {
		t.Errorf("hook saw %v, client got %v", seen, names(evs))
	}
}

func TestBeforeEventErrorCutsTheStream(t *testing.T) {
	s := start(t, Options{BeforeEvent: func(_ context.Context, ev Event) error {
		if ev.Index == 2 {
			return errors.New("stop here")
		}
		return nil
	}})
	resp := call(t, guard(t), s, "POST", "/v1/messages", keyA, streaming(messagesBody))
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) != 2 {
		t.Errorf("%d events, err %v; want 2 and a cut", len(evs), err)
	}
}

func TestCutAfter(t *testing.T) {
	for _, tc := range streamRoutes {
		for _, cut := range []struct {
			after, deltas int
		}{
			{2, 2},
			{-1, 0},
			{99, 5}, // past the last delta: cut before the closing events
		} {
			t.Run(fmt.Sprintf("%s/%d", tc.path, cut.after), func(t *testing.T) {
				s := start(t, Options{})
				s.Script(keyA, Step{CutAfter: cut.after})
				s.Script(keyO, Step{CutAfter: cut.after})
				resp := call(t, guard(t), s, "POST", tc.path, tc.cred, tc.body)
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				evs, err := readEvents(resp.Body)
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("stream ended with %v after %d events, want a cut", err, len(evs))
				}
				if got := countDeltas(evs, tc.delta); got != cut.deltas {
					t.Errorf("%d deltas before the cut, want %d", got, cut.deltas)
				}
				if len(evs) == 0 {
					t.Error("the opening events never arrived")
				}
				for _, ev := range evs {
					if ev.Name == "message_stop" || ev.Name == "response.completed" || string(ev.Data) == "[DONE]" {
						t.Errorf("closing event %q before the cut", ev.Name+string(ev.Data))
					}
				}
				// The credential's next request streams whole again.
				resp2 := call(t, guard(t), s, "POST", tc.path, tc.cred, tc.body)
				defer resp2.Body.Close()
				if evs := events(t, resp2.Body); countDeltas(evs, tc.delta) != 5 {
					t.Errorf("second stream has %d deltas", countDeltas(evs, tc.delta))
				}
				if recs := s.Requests(); recs[0].Cancelled || recs[0].Status != 200 {
					t.Errorf("a cut made by the sim recorded as %+v", recs[0])
				}
			})
		}
	}
}

func TestCutAfterOnJSON(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyA, Step{CutAfter: 1}, Step{Status: 500, CutAfter: 1})
	for _, want := range []int{200, 500} {
		resp := call(t, guard(t), s, "POST", "/v1/messages", keyA, messagesBody)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !errors.Is(err, io.ErrUnexpectedEOF) || len(b) == 0 {
			t.Errorf("status %d (want %d), %d bytes, err %v: want a body cut half way", resp.StatusCode, want, len(b), err)
		}
	}
}

func TestStreamError(t *testing.T) {
	for _, tc := range []struct {
		path, cred string
		step       Step
		name       string
		want       string
	}{
		{"/v1/messages", keyA, StreamOverloaded("anthropic"), "error", `"overloaded_error"`},
		{"/v1/responses", keyO, StreamOverloaded("openai"), "response.failed", `"server_is_overloaded"`},
		{"/backend-api/codex/responses", keyO, StreamOverloaded("codex"), "response.failed", `"server_is_overloaded"`},
		{"/v1/chat/completions", keyO, Step{StreamError: `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`}, "", `"boom"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			s := start(t, Options{})
			s.Script(tc.cred, tc.step)
			// Not a streaming request: a StreamError answers SSE anyway.
			body := map[string]string{"/v1/messages": messagesBody, "/v1/chat/completions": chatBody, "/backend-api/codex/responses": codexBody}[tc.path]
			if body == "" {
				body = responseBody
			}
			resp := call(t, guard(t), s, "POST", tc.path, tc.cred, body)
			defer resp.Body.Close()
			evs := events(t, resp.Body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if len(evs) != 1 || evs[0].Name != tc.name || !strings.Contains(string(evs[0].Data), tc.want) {
				t.Fatalf("events %+v", evs)
			}
			decode(t, evs[0].Data)
		})
	}
}

func TestDropAnswersNothing(t *testing.T) {
	s := start(t, Options{})
	s.Script(keyO, Step{Drop: true})
	resp, err := do(guard(t), s, "POST", "/v1/chat/completions", keyO, chatBody)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response (%d) from a dropped connection", resp.StatusCode)
	}
	if recs := s.Requests(); len(recs) != 1 || recs[0].Status != 0 || recs[0].Cancelled {
		t.Errorf("records %+v", recs)
	}
	if status, _, _ := post(t, s, "/v1/chat/completions", keyO, chatBody); status != 200 {
		t.Errorf("after the drop: %d", status)
	}
}

func TestStampAndInterval(t *testing.T) {
	// A real interval, but nothing asserts how long it took: the test
	// proves the paced path still delivers every event, stamped.
	s := start(t, Options{Chunks: 3, ChunkInterval: time.Millisecond, Stamp: true})
	resp := call(t, guard(t), s, "POST", "/v1/responses", keyO, streaming(responseBody))
	defer resp.Body.Close()
	evs := events(t, resp.Body)
	if countDeltas(evs, "response.output_text.delta") != 3 {
		t.Fatalf("events %v", names(evs))
	}
	for _, ev := range evs {
		if num(t, decode(t, ev.Data), "sim_emit_unix_nano") <= 0 {
			t.Errorf("unstamped %s", ev.Data)
		}
	}
}

func TestZeroChunks(t *testing.T) {
	s := start(t, Options{Chunks: -1})
	resp := call(t, guard(t), s, "POST", "/v1/messages", keyA, streaming(messagesBody))
	defer resp.Body.Close()
	evs := events(t, resp.Body)
	if countDeltas(evs, "content_block_delta") != 0 || evs[len(evs)-1].Name != "message_stop" {
		t.Errorf("events %v", names(evs))
	}
}
