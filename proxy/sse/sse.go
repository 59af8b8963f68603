// Package sse reads Server-Sent Events. It is the program's one reader of
// the format: the proxy peeks at a stream's first events with it, meters a
// stream's usage as it passes, and fallback translates streams event by
// event with it.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxEvent bounds one event. The largest real events repeat a whole answer
// (response.completed, or response.failed echoing a long request's
// instructions); an upstream that sends more without a blank line is
// broken, and must not grow the proxy's memory without end.
const MaxEvent = 16 << 20

// ErrTooLarge is returned for an event larger than the reader's limit.
var ErrTooLarge = errors.New("sse: event larger than the limit")

// Event is one event. Raw is the event's bytes exactly as they arrived,
// up to and including its blank line (only when the Reader keeps them).
// All three are only valid until the next call of Next.
type Event struct {
	Name string
	Data []byte
	Raw  []byte
}

// Reader reads events one at a time: "event:" and "data:" fields, data on
// several lines joined by "\n", comments and other fields skipped, LF or
// CRLF line ends.
type Reader struct {
	br      *bufio.Reader
	max     int
	keepRaw bool
	raw     []byte
	data    []byte
	line    []byte // a line that came in more than one piece
	name    string // the last event name read
	n       int    // bytes of the event so far
	// pending is the length of the event last returned in place (inPlace):
	// still in the read buffer, and dropped from it by the next call.
	pending int
}

// bufSize is the read buffer each open stream keeps. Events are mostly a
// few hundred bytes; a longer line is read in pieces (readLine), and the
// source is itself buffered (an HTTP body reads from its connection's
// buffer), so a larger buffer would only be memory held per stream.
const bufSize = 2 << 10

// NewReader reads from r. max bounds one event (≤ 0: MaxEvent); keepRaw
// makes every Event carry its raw bytes, for a caller that passes events
// on unchanged. A caller done with the stream may Release the Reader.
func NewReader(r io.Reader, max int, keepRaw bool) *Reader {
	if max <= 0 {
		max = MaxEvent
	}
	if rd, _ := released.Get().(*Reader); rd != nil {
		rd.br.Reset(r)
		rd.max, rd.keepRaw = max, keepRaw
		return rd
	}
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: max, keepRaw: keepRaw}
}

// released are Readers whose streams ended, with their buffers. Under 256
// streams a wave of new ones allocated a read buffer and event copies
// each, a seventh of what a stream cost the collector (issue 27: the
// served binary ran a collection per wave, against two in three for the
// bare proxy).
var released sync.Pool

// keptCap bounds the event copies a released Reader keeps: the buffers of
// one huge event are not worth holding for the next stream.
const keptCap = 64 << 10

// Release gives the Reader back for another stream. Neither it nor an
// Event it returned may be used after.
func (r *Reader) Release() {
	if cap(r.raw) > keptCap || cap(r.data) > keptCap || cap(r.line) > keptCap {
		return
	}
	r.br.Reset(nil)
	*r = Reader{br: r.br, raw: r.raw[:0], data: r.data[:0], line: r.line[:0]}
	released.Put(r)
}

// Next returns the next event. Events without data (comments, keep-alive
// blank lines) are returned too, with empty Name and Data, when the
// Reader keeps raw bytes, so that a caller passing them on loses nothing;
// otherwise they are skipped. At the end of the input Next returns io.EOF;
// a last event whose lines all ended but which lacks its blank line is
// returned first (some servers close right after "data: [DONE]\n"). An
// event cut off inside a line is io.ErrUnexpectedEOF, with the bytes read
// so far in Raw.
func (r *Reader) Next() (Event, error) {
	if r.pending > 0 {
		r.br.Discard(r.pending)
		r.pending = 0
	}
	if r.keepRaw && r.br.Buffered() == 0 {
		// What the source has now, read at once, so that an event
		// written whole is read in place. Nothing at all: the input ended
		// between events, as the line-by-line path would find.
		if _, err := r.br.Peek(1); err != nil {
			r.raw = r.raw[:0]
			return Event{Raw: r.raw}, err
		}
	}
	if ev, ok := r.inPlace(); ok {
		return ev, nil
	}
	r.raw = r.raw[:0]
	r.data = r.data[:0]
	r.n = 0
	name := ""
	hasData, hasLine := false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(line) > 0 {
					// A line cut short: its data is incomplete.
					return Event{Raw: r.raw}, io.ErrUnexpectedEOF
				}
				if hasData {
					return Event{Name: name, Data: r.data, Raw: r.raw}, nil
				}
				if hasLine && r.keepRaw {
					return Event{Raw: r.raw}, nil
				}
			}
			return Event{Raw: r.raw}, err
		}
		hasLine = true
		t := line
		for len(t) > 0 && (t[len(t)-1] == '\n' || t[len(t)-1] == '\r') {
			t = t[:len(t)-1] // bytes.TrimRight, without building its set per line
		}
		if len(t) == 0 {
			if hasData || r.keepRaw {
				return Event{Name: name, Data: r.data, Raw: r.raw}, nil
			}
			name, hasLine = "", false
			continue
		}
		switch kind, value := r.field(t); kind {
		case eventField:
			name = r.name
		case dataField:
			if hasData {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			hasData = true
		}
	}
}

// The fields a line may hold, as field tells them.
const (
	otherField = iota // comments, id, retry, unknown: skipped
	eventField
	dataField
)

// field reads one line (its end trimmed): its field and value. An event
// line's name goes to r.name.
func (r *Reader) field(t []byte) (kind int, value []byte) {
	f, v, _ := bytes.Cut(t, []byte(":"))
	v = bytes.TrimPrefix(v, []byte(" "))
	switch string(f) {
	case "event":
		// A stream's events mostly repeat the last one's name (deltas
		// after deltas): that string serves again.
		if string(v) != r.name {
			r.name = string(v)
		}
		return eventField, v
	case "data":
		return dataField, v
	}
	return otherField, nil
}

// inPlace returns the next event when all of it, through its blank line, is
// in the read buffer already, as it mostly is (an upstream writes an event
// at a time): its Raw, and its Data when it has one data line, are the
// buffer's own bytes. Under 256 streams the copies into raw and data were
// the relay's largest own cost per event (perf: the copies and the cold
// buffers they touch). Otherwise it reports false, having read nothing.
// Only for a Reader that keeps raw bytes: one that does not skips
// data-less events, which this does not.
func (r *Reader) inPlace() (Event, bool) {
	if !r.keepRaw {
		return Event{}, false
	}
	b, _ := r.br.Peek(r.br.Buffered())
	name := ""
	var data []byte
	lines := 0 // data lines
	for i := 0; i < len(b) && i <= r.max; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return Event{}, false
		}
		t := b[i : i+j]
		i += j + 1
		for len(t) > 0 && t[len(t)-1] == '\r' {
			t = t[:len(t)-1]
		}
		if len(t) == 0 {
			if i > r.max {
				return Event{}, false // the slow path says ErrTooLarge
			}
			r.pending = i
			return Event{Name: name, Data: data, Raw: b[:i]}, true
		}
		switch kind, value := r.field(t); kind {
		case eventField:
			name = r.name
		case dataField:
			switch lines {
			case 0:
				data = value
			case 1:
				// Lines to join: a copy after all.
				r.data = append(append(append(r.data[:0], data...), '\n'), value...)
				data = r.data
			default:
				r.data = append(append(r.data, '\n'), value...)
				data = r.data
			}
			lines++
		}
	}
	return Event{}, false
}

// readLine reads one line, however long, within the event limit. It
// returns the line with its end; at the end of the input a line without
// one comes with io.EOF. The line is valid until the next call: one that
// came whole is the read buffer's own bytes, not a copy.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.n += len(chunk)
		if r.keepRaw {
			// Before the limit check: a caller passing the stream on
			// loses no byte even of an event too large to read.
			r.raw = append(r.raw, chunk...)
		}
		if r.n > r.max {
			return nil, ErrTooLarge
		}
		if !errors.Is(err, bufio.ErrBufferFull) && len(r.line) == 0 {
			return chunk, err // the whole line, in place
		}
		r.line = append(r.line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return r.line, err
		}
	}
}

// Buffered returns the bytes read from the source but not yet returned
// as events, so a caller can hand the rest of the stream on without this
// Reader.
func (r *Reader) Buffered() []byte {
	b, _ := r.br.Peek(r.br.Buffered())
	return b[r.pending:]
}
