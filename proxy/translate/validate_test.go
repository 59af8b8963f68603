package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/subpool/subpool/proxy/sse"
	"io"
	"regexp"
	"testing"
)

// The validators check a translated stream against what a client of the
// wire relies on: event order, block and item indexes, deltas adding up
// to what the closing events repeat, tool arguments forming a JSON
// object, and a terminal event last. They are independent of the
// encoders: they read the bytes as a client would.

type sseEvent struct {
	name string
	data []byte
}

func parseSSE(t *testing.T, b []byte) []sseEvent {
	t.Helper()
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", b[max(0, len(b)-40):])
	}
	var evs []sseEvent
	r := sse.NewReader(bytes.NewReader(b), 0, false)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, sseEvent{ev.Name, bytes.Clone(ev.Data)})
	}
}

func validate(t *testing.T, wire Target, b []byte) []sseEvent {
	t.Helper()
	if wire == Gemini || wire == GeminiCodeAssist {
		evs, err := validGemini(b, wire == GeminiCodeAssist)
		if err != nil {
			t.Fatalf("invalid %s stream: %v\n%s", wire, err, b)
		}
		return evs
	}
	evs := parseSSE(t, b)
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	var err error
	switch wire {
	case Anthropic:
		err = validAnthropic(evs)
	case OpenAIResponses:
		err = validResponses(evs)
	case OpenAIChat:
		err = validChat(evs)
	}
	if err != nil {
		t.Fatalf("invalid %s stream: %v\n%s", wire, err, b)
	}
	return evs
}

type jmap = map[string]any

func decodeData(ev sseEvent) (jmap, error) {
	var m jmap
	if err := json.Unmarshal(ev.data, &m); err != nil {
		return nil, fmt.Errorf("event %q data is not a JSON object: %v", ev.name, err)
	}
	return m, nil
}

func jstr(m jmap, keys ...string) string {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(jmap)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

func jnum(m jmap, keys ...string) (int, bool) {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(jmap)
		if !ok {
			return 0, false
		}
		v = mm[k]
	}
	f, ok := v.(float64)
	return int(f), ok
}

func jsonObject(s string) bool {
	var m jmap
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

var anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func validAnthropic(evs []sseEvent) error {
	b := &aBlocks{open: -1}
	sawDelta := false
	for i, ev := range evs {
		m, err := decodeData(ev)
		if err != nil {
			return err
		}
		if jstr(m, "type") != ev.name {
			return fmt.Errorf("event %d: name %q but type %q", i, ev.name, jstr(m, "type"))
		}
		last := i == len(evs)-1
		switch ev.name {
		case "message_start":
			if i != 0 {
				return fmt.Errorf("message_start at %d", i)
			}
			if !anthropicID.MatchString(jstr(m, "message", "id")) || jstr(m, "message", "role") != "assistant" {
				return fmt.Errorf("message_start: bad message %s", ev.data)
			}
		case "content_block_start", "content_block_delta", "content_block_stop":
			if err := b.step(ev, m); err != nil {
				return err
			}
		case "message_delta":
			if b.open >= 0 || sawDelta {
				return fmt.Errorf("message_delta with block %d open or repeated", b.open)
			}
			sawDelta = true
			switch jstr(m, "delta", "stop_reason") {
			case "end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn":
			default:
				return fmt.Errorf("stop_reason %q", jstr(m, "delta", "stop_reason"))
			}
			if _, ok := jnum(m, "usage", "output_tokens"); !ok {
				return fmt.Errorf("message_delta without usage.output_tokens")
			}
		case "message_stop":
			if !sawDelta || !last {
				return fmt.Errorf("message_stop at %d without message_delta or not last", i)
			}
		case "error":
			if !last || jstr(m, "error", "type") == "" || jstr(m, "error", "message") == "" {
				return fmt.Errorf("error event not last or without type and message")
			}
		case "ping":
		default:
			return fmt.Errorf("unknown event %q", ev.name)
		}
		if last && ev.name != "message_stop" && ev.name != "error" {
			return fmt.Errorf("stream ends with %q", ev.name)
		}
	}
	return nil
}

// aBlocks is validAnthropic's view of the content blocks: the one open
// (-1: none), its type and what its deltas carried, and the index the
// next one must have.
type aBlocks struct {
	open, next int
	openType   string
	acc        bytes.Buffer
}

// step checks one content_block_ event.
func (b *aBlocks) step(ev sseEvent, m jmap) error {
	switch ev.name {
	case "content_block_start":
		idx, _ := jnum(m, "index")
		if b.open >= 0 || idx != b.next {
			return fmt.Errorf("content_block_start %d while %d open, %d expected", idx, b.open, b.next)
		}
		b.open, b.openType = idx, jstr(m, "content_block", "type")
		b.acc.Reset()
		switch b.openType {
		case "text":
			if jstr(m, "content_block", "text") != "" {
				return fmt.Errorf("text block starts with text")
			}
		case "tool_use":
			if !anthropicID.MatchString(jstr(m, "content_block", "id")) || jstr(m, "content_block", "name") == "" {
				return fmt.Errorf("tool_use block without valid id or name: %s", ev.data)
			}
		default:
			return fmt.Errorf("block type %q", b.openType)
		}
	case "content_block_delta":
		idx, _ := jnum(m, "index")
		if idx != b.open {
			return fmt.Errorf("delta for %d while %d open", idx, b.open)
		}
		switch dt := jstr(m, "delta", "type"); {
		case dt == "text_delta" && b.openType == "text":
			b.acc.WriteString(jstr(m, "delta", "text"))
		case dt == "input_json_delta" && b.openType == "tool_use":
			b.acc.WriteString(jstr(m, "delta", "partial_json"))
		default:
			return fmt.Errorf("delta %q in a %s block", dt, b.openType)
		}
	case "content_block_stop":
		idx, _ := jnum(m, "index")
		if idx != b.open {
			return fmt.Errorf("stop for %d while %d open", idx, b.open)
		}
		if b.openType == "text" && b.acc.Len() == 0 {
			return fmt.Errorf("empty text block %d", idx)
		}
		if b.openType == "tool_use" && b.acc.Len() > 0 && !jsonObject(b.acc.String()) {
			return fmt.Errorf("tool_use %d input %q is not a JSON object", idx, b.acc.String())
		}
		b.open = -1
		b.next++
	}
	return nil
}

func validResponses(evs []sseEvent) error {
	it := &rItems{}
	for i, ev := range evs {
		m, err := decodeData(ev)
		if err != nil {
			return err
		}
		if jstr(m, "type") != ev.name {
			return fmt.Errorf("event %d: name %q but type %q", i, ev.name, jstr(m, "type"))
		}
		if seq, ok := jnum(m, "sequence_number"); !ok || seq != i {
			return fmt.Errorf("event %d has sequence_number %d", i, seq)
		}
		last := i == len(evs)-1
		oi, _ := jnum(m, "output_index")
		switch ev.name {
		case "response.created":
			if i != 0 || jstr(m, "response", "status") != "in_progress" {
				return fmt.Errorf("response.created at %d", i)
			}
		case "response.in_progress":
		case "response.output_item.added", "response.output_item.done",
			"response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
			"response.refusal.delta", "response.refusal.done",
			"response.function_call_arguments.delta", "response.function_call_arguments.done":
			if err := it.step(ev, m, oi); err != nil {
				return err
			}
		case "response.completed", "response.incomplete", "response.failed":
			// A failure may cut an item short; success may not.
			if !last || (it.openID != "" && ev.name != "response.failed") {
				return fmt.Errorf("%s at %d with item %q open", ev.name, i, it.openID)
			}
			r, _ := m["response"].(jmap)
			out, _ := r["output"].([]any)
			if ev.name != "response.failed" && (len(out) != it.done || r["usage"] == nil) {
				return fmt.Errorf("%s with %d output items (%d streamed) or no usage", ev.name, len(out), it.done)
			}
			if ev.name == "response.failed" && jstr(m, "response", "error", "message") == "" {
				return fmt.Errorf("response.failed without error message")
			}
		default:
			return fmt.Errorf("unknown event %q", ev.name)
		}
		if last && ev.name != "response.completed" && ev.name != "response.incomplete" && ev.name != "response.failed" {
			return fmt.Errorf("stream ends with %q", ev.name)
		}
	}
	return nil
}

// rItems is validResponses' view of the output items: how many are
// done, the one open ("": none) with its type, its content part's type,
// and what its deltas carried.
type rItems struct {
	done                       int
	openID, openType, partType string
	acc                        bytes.Buffer
}

// inItem checks that an event names the open item.
func (it *rItems) inItem(ev sseEvent, m jmap, oi int) error {
	if it.openID == "" || jstr(m, "item_id") != it.openID || oi != it.done {
		return fmt.Errorf("%s for item %q/%d while %q/%d open", ev.name, jstr(m, "item_id"), oi, it.openID, it.done)
	}
	return nil
}

// step checks one event of an output item, oi its output_index.
func (it *rItems) step(ev sseEvent, m jmap, oi int) error {
	switch ev.name {
	case "response.output_item.added":
		if it.openID != "" || oi != it.done || jstr(m, "item", "status") != "in_progress" {
			return fmt.Errorf("output_item.added %d while %q open, %d done", oi, it.openID, it.done)
		}
		it.openID, it.openType = jstr(m, "item", "id"), jstr(m, "item", "type")
		it.acc.Reset()
		switch it.openType {
		case "message":
		case "function_call":
			if jstr(m, "item", "call_id") == "" || jstr(m, "item", "name") == "" || len(it.openID) < 4 || it.openID[:3] != "fc_" {
				return fmt.Errorf("function_call item without call_id, name or fc_ id: %s", ev.data)
			}
		default:
			return fmt.Errorf("item type %q", it.openType)
		}
	case "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.refusal.delta", "response.refusal.done":
		if err := it.inItem(ev, m, oi); err != nil {
			return err
		}
		if it.openType != "message" {
			return fmt.Errorf("%s in a %s item", ev.name, it.openType)
		}
		if ev.name == "response.content_part.added" {
			it.partType = jstr(m, "part", "type")
		}
		if err := validPartEvent(ev.name, m, it.partType, &it.acc); err != nil {
			return err
		}
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		if err := it.inItem(ev, m, oi); err != nil {
			return err
		}
		if it.openType != "function_call" {
			return fmt.Errorf("%s in a %s item", ev.name, it.openType)
		}
		if ev.name == "response.function_call_arguments.delta" {
			it.acc.WriteString(jstr(m, "delta"))
			break
		}
		args := jstr(m, "arguments")
		if (args != it.acc.String() && !(it.acc.Len() == 0 && args == "{}")) || !jsonObject(args) {
			return fmt.Errorf("arguments.done %q, deltas %q", args, it.acc.String())
		}
	case "response.output_item.done":
		if jstr(m, "item", "id") != it.openID || oi != it.done || jstr(m, "item", "status") != "completed" {
			return fmt.Errorf("output_item.done %q/%d while %q/%d open", jstr(m, "item", "id"), oi, it.openID, it.done)
		}
		if it.openType == "function_call" && !jsonObject(jstr(m, "item", "arguments")) {
			return fmt.Errorf("finished function_call without JSON arguments")
		}
		it.openID = ""
		it.done++
	}
	return nil
}

func validChat(evs []sseEvent) error {
	var id string
	finishes := 0
	args := map[int]*bytes.Buffer{}
	for i, ev := range evs {
		last := i == len(evs)-1
		if ev.name != "" {
			return fmt.Errorf("event %d has a name %q; Chat Completions sends data lines only", i, ev.name)
		}
		if string(ev.data) == "[DONE]" {
			if !last || finishes != 1 {
				return fmt.Errorf("[DONE] at %d of %d after %d finish reasons", i, len(evs), finishes)
			}
			break
		}
		m, err := decodeData(ev)
		if err != nil {
			return err
		}
		if _, isErr := m["error"]; isErr {
			if !last || jstr(m, "error", "message") == "" {
				return fmt.Errorf("error chunk not last or without message")
			}
			return nil // a failure may cut a call short; success may not
		}
		if m["object"] != "chat.completion.chunk" || (id != "" && m["id"] != id) {
			return fmt.Errorf("chunk %d: object %v id %v", i, m["object"], m["id"])
		}
		id, _ = m["id"].(string)
		choices, _ := m["choices"].([]any)
		if len(choices) == 0 && finishes == 1 && m["usage"] != nil {
			continue // the usage chunk of stream_options.include_usage, after the finish
		}
		if len(choices) != 1 {
			return fmt.Errorf("chunk %d has %d choices", i, len(choices))
		}
		ch := choices[0].(jmap)
		if ch["finish_reason"] != nil {
			finishes++
		}
		delta, _ := ch["delta"].(jmap)
		calls, _ := delta["tool_calls"].([]any)
		for _, c := range calls {
			cm := c.(jmap)
			idx, ok := jnum(cm, "index")
			if !ok {
				return fmt.Errorf("tool call delta without index")
			}
			if args[idx] == nil {
				if idx != len(args) || jstr(cm, "id") == "" || jstr(cm, "type") != "function" || jstr(cm, "function", "name") == "" {
					return fmt.Errorf("tool call %d starts without id, type or name: %s", idx, ev.data)
				}
				args[idx] = &bytes.Buffer{}
			}
			args[idx].WriteString(jstr(cm, "function", "arguments"))
		}
		if last {
			return fmt.Errorf("stream ends without [DONE]")
		}
	}
	for idx, a := range args {
		if !jsonObject(a.String()) {
			return fmt.Errorf("tool call %d arguments %q are not a JSON object", idx, a.String())
		}
	}
	return nil
}

// validPartEvent checks one event of a message's content part, of type
// partType (output_text or refusal): its deltas and done events must be
// of that type and add up to what the done events say.
func validPartEvent(name string, m jmap, partType string, acc *bytes.Buffer) error {
	refusal := partType == "refusal"
	switch name {
	case "response.output_text.delta", "response.refusal.delta":
		if refusal != (name == "response.refusal.delta") {
			return fmt.Errorf("%s in a %s part", name, partType)
		}
		acc.WriteString(jstr(m, "delta"))
	case "response.output_text.done":
		if refusal || jstr(m, "text") != acc.String() {
			return fmt.Errorf("output_text.done %q, deltas %q", jstr(m, "text"), acc.String())
		}
	case "response.refusal.done":
		if !refusal || jstr(m, "refusal") != acc.String() {
			return fmt.Errorf("refusal.done %q, deltas %q", jstr(m, "refusal"), acc.String())
		}
	case "response.content_part.done":
		field := "text"
		if refusal {
			field = "refusal"
		}
		if jstr(m, "part", field) != acc.String() {
			return fmt.Errorf("content_part.done %q, deltas %q", jstr(m, "part", field), acc.String())
		}
	}
	return nil
}
