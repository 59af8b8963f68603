package sse

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkNext reads an Anthropic stream as the relay does (raw bytes
// kept): 64 content deltas between the opening and closing events.
func BenchmarkNext(b *testing.B) {
	var s bytes.Buffer
	s.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n")
	s.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range 64 {
		s.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"0123456789abcdef\"}}\n\n")
	}
	s.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	in := s.Bytes()
	src := bytes.NewReader(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(in)
		r := NewReader(src, 0, true)
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}
