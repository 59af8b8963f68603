package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func all(t *testing.T, in string, keepRaw bool) (evs []Event, raw string, err error) {
	t.Helper()
	r := NewReader(iotest.OneByteReader(strings.NewReader(in)), 0, keepRaw)
	for {
		ev, e := r.Next()
		raw += string(ev.Raw)
		if e != nil {
			return evs, raw, e
		}
		evs = append(evs, Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
	}
}

func TestReader(t *testing.T) {
	in := "event: message_start\ndata: {\"a\":1}\n\nevent: lonely\n\n: keep-alive\n\ndata: line1\r\ndata: line2\r\n\r\nretry: 10\nid: 7\nevent: x\ndata:nospace\n\ndata: [DONE]\n"
	evs, _, err := all(t, in, false)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err %v", err)
	}
	want := []Event{{Name: "message_start", Data: []byte(`{"a":1}`)}, {Data: []byte("line1\nline2")}, {Name: "x", Data: []byte("nospace")}, {Data: []byte("[DONE]")}}
	if len(evs) != len(want) {
		t.Fatalf("got %d events: %q", len(evs), evs)
	}
	for i := range want {
		if evs[i].Name != want[i].Name || !bytes.Equal(evs[i].Data, want[i].Data) {
			t.Errorf("event %d: %q %q, want %q %q", i, evs[i].Name, evs[i].Data, want[i].Name, want[i].Data)
		}
	}
	// Keeping raw bytes loses none of them, comments included.
	_, raw, _ := all(t, in, true)
	if raw != in {
		t.Errorf("raw bytes differ:\n%q\n%q", raw, in)
	}
}

// A 1 MiB event arrives whole, in one line or many: the error events that
// matter most echo a whole response object.
func TestReaderLargeEvents(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	in := "event: error\ndata: {\"m\":\"" + big + "\"}\n\nevent: b\ndata: " + big[:5000] + "\ndata: " + big[:5000] + "\n\n"
	r := NewReader(strings.NewReader(in), 0, true)
	ev, err := r.Next()
	if err != nil || ev.Name != "error" || len(ev.Data) != len(big)+8 || len(ev.Raw) != len(big)+8+21 {
		t.Fatalf("first: %v %q len(data)=%d len(raw)=%d", err, ev.Name, len(ev.Data), len(ev.Raw))
	}
	ev, err = r.Next()
	if err != nil || ev.Name != "b" || len(ev.Data) != 10001 {
		t.Fatalf("second: %v %q %d", err, ev.Name, len(ev.Data))
	}
}

func TestReaderLimit(t *testing.T) {
	r := NewReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 64, false)
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

func TestReaderCut(t *testing.T) {
	r := NewReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"cut"), 0, true)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	ev, err := r.Next()
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(ev.Raw) != "data: {\"cut" {
		t.Fatalf("cut: %v %q", err, ev.Raw)
	}
}

func TestBuffered(t *testing.T) {
	r := NewReader(strings.NewReader("data: 1\n\ndata: 2\n\n"), 0, false)
	r.Next()
	if got := string(r.Buffered()); got != "data: 2\n\n" {
		t.Fatalf("buffered %q", got)
	}
}

// FuzzReader: whatever the input, raw bytes reassemble it exactly (the
// proxy passes them on), data never holds a line end it did not join, and
// the reader never fails on anything but the end or the limit.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: b\n\n", "data: x\r\n\r\n", ": c\n\n", "data: [DONE]\n", "data: cut", "\n\n\n", "event:\ndata:\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader(iotest.HalfReader(strings.NewReader(in)), 1<<16, true)
		var raw []byte
		for {
			ev, err := r.Next()
			raw = append(raw, ev.Raw...)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("err %v", err)
				}
				if !errors.Is(err, ErrTooLarge) && string(raw) != in {
					t.Fatalf("raw %q != input %q", raw, in)
				}
				return
			}
			if bytes.ContainsAny(ev.Data, "\r") && !strings.Contains(in, "\r") {
				t.Fatalf("data %q has a CR the input lacks", ev.Data)
			}
		}
	})
}

// FuzzInPlace: an event read in place from the buffer (the whole stream at
// hand) is the event the line-by-line path gives (one byte at a time, so
// no event is ever whole in the buffer), field by field, and Buffered
// leaves out what was returned.
func FuzzInPlace(f *testing.F) {
	for _, s := range []string{"event: a\ndata: b\n\n", "data: x\r\n\r\n", ": c\n\n", "data: 1\ndata: 2\n\ndata: 3\n\n",
		"event: e\ndata:\n\nevent: e\ndata: y\n\n", "\n\n\n", "data: a\rb\n\n", "data: [DONE]\n", "event: a\r\r\ndata: b\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		whole := NewReader(strings.NewReader(in), 1<<12, true)
		bytewise := NewReader(iotest.OneByteReader(strings.NewReader(in)), 1<<12, true)
		for {
			a, aerr := whole.Next()
			b, berr := bytewise.Next()
			if a.Name != b.Name || !bytes.Equal(a.Data, b.Data) || !bytes.Equal(a.Raw, b.Raw) || !errors.Is(aerr, berr) && aerr != berr {
				t.Fatalf("in place %q %q %q %v; line by line %q %q %q %v", a.Name, a.Data, a.Raw, aerr, b.Name, b.Data, b.Raw, berr)
			}
			if aerr != nil {
				return
			}
			if rest := whole.Buffered(); !strings.Contains(in, string(a.Raw)+string(rest)) {
				t.Fatalf("buffered %q after %q", rest, a.Raw)
			}
		}
	})
}

// An event read in place is the buffer's own bytes: no copy of a
// one-line event, and the next call gives the next event.
func TestInPlaceNoCopy(t *testing.T) {
	in := "event: content_block_delta\ndata: {\"x\":1}\n\nevent: content_block_delta\ndata: {\"x\":2}\n\n"
	r := NewReader(strings.NewReader(in), 0, true)
	a, err := r.Next()
	if err != nil || string(a.Data) != `{"x":1}` || r.pending != len(a.Raw) {
		t.Fatalf("first: %q %v, pending %d", a.Data, err, r.pending)
	}
	if got := string(r.Buffered()); got != in[len(a.Raw):] {
		t.Fatalf("buffered %q", got)
	}
	if cap(r.raw) != 0 || cap(r.data) != 0 {
		t.Fatalf("copied: raw %d, data %d", cap(r.raw), cap(r.data))
	}
	b, err := r.Next()
	if err != nil || string(b.Data) != `{"x":2}` || b.Name != "content_block_delta" {
		t.Fatalf("second: %q %q %v", b.Name, b.Data, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// A released Reader serves the next stream as a new one would: nothing of
// the last stream's buffered bytes, the event it held in place, or its limit
// carries over.
func TestReleasedReaderStartsClean(t *testing.T) {
	for range 20 { // sync.Pool may drop a Put; most rounds reuse one
		r := NewReader(strings.NewReader("event: first\ndata: a\n\nevent: left\ndata: unread\n\n"), 8<<10, true)
		if ev, err := r.Next(); err != nil || ev.Name != "first" {
			t.Fatalf("first stream: %q %v", ev.Name, err)
		}
		r.Release()
		r = NewReader(strings.NewReader("data: b\n\n"), 0, false)
		ev, err := r.Next()
		if err != nil || ev.Name != "" || string(ev.Data) != "b" || ev.Raw != nil {
			t.Fatalf("second stream: name %q data %q raw %q err %v", ev.Name, ev.Data, ev.Raw, err)
		}
		if r.max != MaxEvent {
			t.Fatalf("limit carried over: %d", r.max)
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("second stream went on: %v", err)
		}
		r.Release()
	}
}
