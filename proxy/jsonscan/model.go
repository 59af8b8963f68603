package jsonscan

import (
	"bytes"
	"encoding/json"
)

// RenameModel returns doc with the string value of its "model" field
// replaced by alias: the top-level one (JSON answers, Chat Completions
// chunks, Responses' answer) and the one inside a top-level "message" or
// "response" object (Anthropic's message_start, Responses' stream
// events). A "model" anywhere else (a tool's input) is the model's own
// output and is left alone. doc that is cut short or not JSON comes back
// unchanged where it could not be read.
func RenameModel(doc []byte, alias string) []byte {
	if !bytes.Contains(doc, []byte(`"model"`)) {
		return doc
	}
	q, _ := json.Marshal(alias)
	type frame struct {
		obj bool
		key string // the key this container is the value of
	}
	var stack []frame
	var out []byte
	last := 0
	key := ""
	for i := 0; i < len(doc); {
		switch doc[i] {
		case '"':
			j := stringEnd(doc, i)
			if j < 0 {
				i = len(doc)
				continue
			}
			k := skipSpace(doc, j)
			if k >= len(doc) || doc[k] != ':' || len(stack) == 0 || !stack[len(stack)-1].obj {
				i = j
				continue
			}
			key = string(doc[i+1 : j-1])
			v := skipSpace(doc, k+1)
			top := stack[0].obj && (len(stack) == 1 || len(stack) == 2 && (stack[1].key == "message" || stack[1].key == "response"))
			if key == "model" && top && v < len(doc) && doc[v] == '"' {
				if e := stringEnd(doc, v); e > 0 {
					out = append(append(out, doc[last:v]...), q...)
					last, i = e, e
					continue
				}
			}
			i = k + 1
			continue
		case '{', '[':
			stack = append(stack, frame{obj: doc[i] == '{', key: key})
			key = ""
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = ""
		case ',':
			key = ""
		}
		i++
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

// stringEnd is the index just past the JSON string starting at doc[i]
// (a '"'), or -1 when it is cut short.
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}
