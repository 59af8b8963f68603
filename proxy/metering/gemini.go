package metering

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Gemini reports usageMetadata in every answer and, when streaming, in
// every chunk, each a running total (the last one counts). Code Assist
// wraps the same object in {"response": …}. promptTokenCount includes the
// cached part (cachedContentTokenCount), as OpenAI's counts do; thoughts
// are billed as output.

var usageMetadataKey = []byte(`"usageMetadata"`)

// gemini reads a Gemini answer or chunk; false when it holds none.
func (m *Meter) gemini(data []byte) bool {
	if !bytes.Contains(data, usageMetadataKey) {
		return false
	}
	r := gjson.GetBytes(data, "usageMetadata")
	if !r.IsObject() {
		r = gjson.GetBytes(data, "response.usageMetadata")
	}
	if !r.IsObject() {
		return false // the word in a text, say: not Gemini's usage
	}
	var prompt, cached, candidates, thoughts count
	ok := true
	r.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "promptTokenCount":
			ok = prompt.read(v)
		case "cachedContentTokenCount":
			ok = cached.read(v)
		case "candidatesTokenCount":
			ok = candidates.read(v)
		case "thoughtsTokenCount":
			ok = thoughts.read(v)
		}
		return ok
	})
	if !ok || !(prompt.set || candidates.set) {
		return true
	}
	m.seen = true
	m.u.CacheRead = min(cached.n, prompt.n)
	m.u.Input = prompt.n - m.u.CacheRead
	m.u.Output = candidates.n + thoughts.n
	return true
}
