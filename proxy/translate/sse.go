package translate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// EventReader reads Server-Sent Events: "event:" and "data:" fields,
// multi-line data joined by newlines, comments and other fields skipped,
// LF or CRLF line ends.
type EventReader struct {
	br *bufio.Reader
}

func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// maxEvent bounds one event's data. The largest real events repeat a
// whole answer (response.completed); an upstream that sends more without
// a blank line is broken, and must not grow the proxy's memory without
// end.
const maxEvent = 32 << 20

var errEventTooLarge = errors.New("translate: SSE event larger than 32 MiB")

// Next returns the next event with data. At the end of the input it
// returns io.EOF; an event cut off inside a line is dropped, since its
// data is incomplete.
func (r *EventReader) Next() (event string, data []byte, err error) {
	var hasData bool
	var line []byte
	for {
		line = line[:0]
		for {
			chunk, err := r.br.ReadSlice('\n')
			line = append(line, chunk...)
			if len(line)+len(data) > maxEvent {
				return "", nil, errEventTooLarge
			}
			if err == nil {
				break
			}
			if errors.Is(err, io.EOF) && len(line) == 0 && hasData {
				// The last event lacks its blank line but every line of it
				// ended: some servers close right after "data: [DONE]\n".
				return event, data, nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return "", nil, err // io.EOF included: a line cut short is no event
			}
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData {
				return event, data, nil
			}
			event = "" // an event with no data is no event
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}

func writeEvent(b *bytes.Buffer, name string, data []byte) {
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
}

func writeData(b *bytes.Buffer, data []byte) {
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
}

// kv and object build JSON objects with fields in a chosen order, the
// order the upstreams use, which a map would sort away.
type kv struct {
	k string
	v any
}

func object(fields ...kv) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(f.k))
		b.WriteByte(':')
		if raw, ok := f.v.(json.RawMessage); ok {
			b.Write(raw)
		} else {
			b.Write(marshal(f.v))
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
