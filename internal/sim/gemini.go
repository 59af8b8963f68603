package sim

import (
	"encoding/json"
	"strings"
)

// The Gemini API (generativelanguage.googleapis.com, API keys):
//
//	POST /v1beta/models/{model}:generateContent
//	POST /v1beta/models/{model}:streamGenerateContent?alt=sse
//	POST /v1beta/models/{model}:countTokens
//	GET  /v1beta/models, GET /v1beta/models/{model}
//
// and the GenerateContentResponse both it and Code Assist answer with.

// geminiBody is the part of a GenerateContentRequest the sim reads (the
// body itself on the Gemini API, the envelope's "request" on Code Assist).
type geminiBody struct {
	Model    string          `json:"model"` // Code Assist countTokens: "models/…"
	Contents []geminiContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             *string         `json:"text"`
		FunctionCall     json.RawMessage `json:"functionCall"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	} `json:"parts"`
}

// codeAssistEnvelope is what Gemini CLI wraps a request in for Code Assist.
type codeAssistEnvelope struct {
	Model        string          `json:"model"`
	Project      string          `json:"project"`
	UserPromptID string          `json:"user_prompt_id"`
	Request      json.RawMessage `json:"request"`
}

// envelope is x's Code Assist envelope (empty on the Gemini API).
func (x *exchange) envelope() *codeAssistEnvelope {
	if x.env == nil {
		x.env = &codeAssistEnvelope{}
		if x.codeAssist() {
			_ = json.Unmarshal(x.body, x.env)
		}
	}
	return x.env
}

// gemini is x's GenerateContentRequest.
func (x *exchange) gemini() *geminiBody {
	if x.gbody == nil {
		x.gbody = &geminiBody{}
		raw := json.RawMessage(x.body)
		if x.codeAssist() {
			raw = x.envelope().Request
		}
		_ = json.Unmarshal(raw, x.gbody)
	}
	return x.gbody
}

// googleRequest fills the request fields the records, steps and quotas
// read: the model (the path's on the Gemini API, the envelope's on Code
// Assist) and whether the call streams.
func (x *exchange) googleRequest(pathModel string) {
	stream, _ := x.googleStreaming()
	x.req.Stream = stream
	switch {
	case pathModel != "":
		x.req.Model = pathModel
	case x.codeAssist() && x.envelope().Model != "":
		x.req.Model = x.envelope().Model
	case x.codeAssist():
		x.req.Model = strings.TrimPrefix(x.gemini().Model, "models/")
	}
}

// googleTool is the tool call a Gemini request gets, by the package's
// rule: functionDeclarations offered, and x-sim-tool: 1 or a last user
// turn saying "use the tool". A functionResponse coming back is answered
// with text.
func (x *exchange) googleTool() *toolCall {
	g := x.gemini()
	var first *toolCall
	for _, t := range g.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == "" {
				continue
			}
			schema := f.ParametersJSONSchema
			if schema == nil {
				schema = f.Parameters
			}
			first = &toolCall{name: f.Name, args: argsFor(schema)}
			break
		}
		if first != nil {
			break
		}
	}
	if first == nil {
		return nil
	}
	if x.r.Header.Get("x-sim-tool") != "1" && !strings.Contains(strings.ToLower(lastGeminiUserText(g.Contents)), "use the tool") {
		return nil
	}
	return first
}

// lastGeminiUserText is the text of the last turn when it is the user's
// own words; "" when it is the model's or carries a functionResponse.
func lastGeminiUserText(contents []geminiContent) string {
	if len(contents) == 0 {
		return ""
	}
	last := contents[len(contents)-1]
	if last.Role != "" && last.Role != "user" {
		return ""
	}
	var b strings.Builder
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			return ""
		}
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// jsonMode is the schema of a request for a JSON answer (Gemini CLI's
// model router and next-speaker check ask for one), nil otherwise.
func (x *exchange) jsonMode() json.RawMessage {
	gc := x.gemini().GenerationConfig
	if gc == nil || gc.ResponseMimeType != "application/json" {
		return nil
	}
	if gc.ResponseJSONSchema != nil {
		return gc.ResponseJSONSchema
	}
	if gc.ResponseSchema != nil {
		return gc.ResponseSchema
	}
	return json.RawMessage(`{}`)
}

// googleAnswer is the content an answer carries: text deltas, or one
// functionCall part.
type googleAnswer struct {
	deltas   []string // text of each streamed chunk
	text     string   // the whole text
	tool     *toolCall
	in, out  int
	model    string
	response string // responseId
}

func (x *exchange) googleAnswer() googleAnswer {
	a := googleAnswer{tool: x.toolCall(), in: x.inputTokens(), model: x.model("gemini-2.5-pro"), response: newID(22)}
	a.out = x.outputTokens(a.tool)
	switch schema := x.jsonMode(); {
	case a.tool != nil:
	case schema != nil:
		a.text = argsFor(schema)
		a.deltas = split(a.text, x.s.opts.Chunks)
		a.out = tokens(len(a.text))
	default:
		a.text = x.answerText()
		for range x.s.opts.Chunks {
			a.deltas = append(a.deltas, x.s.opts.ChunkText)
		}
	}
	return a
}

// thoughtSignature is the opaque signature Gemini 2.5 and later put on a
// functionCall part, which clients must send back with the call.
const thoughtSignature = "CiIBVKhc7oZ0c2ltLXNpZ25hdHVyZS1ub3QtYS1yZWFsLW9uZQ=="

func (a googleAnswer) callPart() obj {
	return obj{"functionCall": obj{"name": a.tool.name, "args": json.RawMessage(a.tool.args)}, "thoughtSignature": thoughtSignature}
}

// usage is usageMetadata; a chunk before the last reports the prompt only.
func (a googleAnswer) usage(final bool) obj {
	u := obj{"promptTokenCount": a.in, "totalTokenCount": a.in,
		"promptTokensDetails": []obj{{"modality": "TEXT", "tokenCount": a.in}}}
	if final {
		u["candidatesTokenCount"] = a.out
		u["totalTokenCount"] = a.in + a.out
	}
	return u
}

// response is one GenerateContentResponse. finish marks the last.
func (x *exchange) googleResponse(a googleAnswer, parts []obj, finish bool) obj {
	cand := obj{"content": obj{"parts": parts, "role": "model"}, "index": 0}
	if finish {
		cand["finishReason"] = "STOP"
	}
	r := obj{"candidates": []obj{cand}, "usageMetadata": a.usage(finish), "modelVersion": a.model, "responseId": a.response}
	if x.codeAssist() {
		// Code Assist answers Vertex's shape, which stamps each response.
		r["createTime"] = x.s.clk.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	return r
}

// geminiGenerate answers :generateContent and :streamGenerateContent of
// the Gemini API. Code Assist reuses it through codeAssistGenerate.
func (x *exchange) geminiGenerate() {
	a := x.googleAnswer()
	wrap := func(r obj) obj { return r }
	if x.codeAssist() {
		trace := strings.ToLower(newID(16))
		wrap = func(r obj) obj { return obj{"response": r, "traceId": trace} }
	}
	stream, sse := x.googleStreaming()
	if !stream {
		whole := []obj{{"text": a.text}}
		if a.tool != nil {
			whole = []obj{a.callPart()}
		}
		x.writeJSON(wrap(x.googleResponse(a, whole, true)))
		return
	}
	if !sse {
		// Without alt=sse Google streams a JSON array of the same chunks.
		var chunks []obj
		for _, d := range a.deltas {
			chunks = append(chunks, wrap(x.googleResponse(a, []obj{{"text": d}}, false)))
		}
		if a.tool != nil {
			chunks = append(chunks, wrap(x.googleResponse(a, []obj{a.callPart()}, false)))
		}
		x.writeJSON(append(chunks, wrap(x.googleResponse(a, []obj{{"text": ""}}, true))))
		return
	}
	st := x.startGoogleStream()
	const name = "GenerateContentResponse"
	if a.tool != nil {
		// Gemini sends a call whole, in one chunk, never in fragments.
		st.send(name, wrap(x.googleResponse(a, []obj{a.callPart()}, false)), true)
	}
	for _, d := range a.deltas {
		st.send(name, wrap(x.googleResponse(a, []obj{{"text": d}}, false)), true)
	}
	st.deltasDone()
	st.send(name, wrap(x.googleResponse(a, []obj{{"text": ""}}, true)), false)
	st.end()
}

// geminiCountTokens answers :countTokens on both wires.
func (x *exchange) geminiCountTokens() {
	n := x.inputTokens()
	x.writeJSON(obj{"totalTokens": n, "promptTokensDetails": []obj{{"modality": "TEXT", "tokenCount": n}}})
}

func geminiModel(i int) obj {
	m := googleModels[i]
	return obj{
		"name": "models/" + m.id, "version": m.version, "displayName": m.name, "description": m.description,
		"inputTokenLimit": m.input, "outputTokenLimit": m.output,
		"supportedGenerationMethods": []string{"generateContent", "countTokens", "createCachedContent", "batchGenerateContent"},
		"temperature":                1, "topP": 0.95, "topK": 64, "maxTemperature": 2, "thinking": true,
	}
}

// geminiModels answers GET /v1beta/models.
func (x *exchange) geminiModels() {
	list := make([]obj, len(googleModels))
	for i := range googleModels {
		list[i] = geminiModel(i)
	}
	x.writeJSON(obj{"models": list})
}

// geminiModel answers GET /v1beta/models/{model}; googleAdmit has
// refused a model the sim does not list.
func (x *exchange) geminiModel() {
	for i, m := range googleModels {
		if m.id == x.req.Model {
			x.writeJSON(geminiModel(i))
			return
		}
	}
}

func knownGeminiModel(id string) bool {
	for _, m := range googleModels {
		if m.id == id {
			return true
		}
	}
	return false
}

func (x *exchange) googleModelNotFound() []byte {
	return x.googleBody(googleErr{code: 404, status: "NOT_FOUND",
		message: "models/" + x.req.Model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."})
}
