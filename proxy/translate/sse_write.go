package translate

import (
	"bytes"
	"encoding/json"
)

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
