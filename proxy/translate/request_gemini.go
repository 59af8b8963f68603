package translate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// readGemini reads a generateContent request (the Gemini API's body, or
// the request inside a Code Assist envelope) into the neutral form. The
// stream flag is not in the body; RequestWithOptions sets it.
func (c *conv) readGemini(body []byte) (*request, error) {
	top, err := c.checkFields(body, geminiFields)
	if err != nil {
		return nil, err
	}
	if raw, ok := top["generationConfig"]; ok {
		if _, err := c.checkFieldsAt(raw, geminiConfigFields, "generationConfig."); err != nil {
			return nil, err
		}
	}
	var in gRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("translate: gemini request body: %w", err)
	}
	r := &request{stopField: "generationConfig.stopSequences", user: in.SessionID}
	if err := c.geminiConfig(r, in.GenerationConfig); err != nil {
		return nil, err
	}
	if si := in.SystemInstruction; si != nil {
		for j, p := range si.Parts {
			switch {
			case p.Thought:
			case p.Text != nil && p.InlineData == nil && p.FileData == nil && p.FunctionCall == nil && p.FunctionResponse == nil:
				r.system = append(r.system, *p.Text)
			default:
				return nil, c.refuse(path("systemInstruction.parts", j), "a system instruction part that is not text")
			}
		}
	}

	p := &geminiPairing{}
	for i, ct := range in.Contents {
		field := path("contents", i)
		var role string
		switch ct.Role {
		case "", "user", "function": // a lone content may omit its role; older SDKs send responses as "function"
			role = "user"
		case "model":
			role = "assistant"
		default:
			return nil, fmt.Errorf("translate: %s: role %q is not user or model", field, ct.Role)
		}
		if role == "assistant" && (len(r.turns) == 0 || r.turns[len(r.turns)-1].role != "assistant") {
			p.newTurn()
		}
		parts, err := c.geminiParts(ct.Parts, role, field+".parts", p)
		if err != nil {
			return nil, err
		}
		r.addTurn(role, parts...)
	}

	if err := c.geminiTools(r, in.Tools); err != nil {
		return nil, err
	}
	if err := c.geminiToolConfig(r, in.ToolConfig); err != nil {
		return nil, err
	}
	if r.endsWithAssistant() {
		return nil, c.refuse(path("contents", len(in.Contents)-1), endsWithAssistant, name(c.to))
	}
	return r, nil
}

// geminiPairing gives function calls and responses the ids the other
// wires pair them by. Gemini pairs them by name and order; its newer API
// adds optional ids, which Gemini CLI sends when it has them (and makes up
// for a response whose call had none, so a response's id need not match).
// A call without an id gets one derived from its place in the
// conversation: the same on every turn, since a conversation only grows.
// A response takes the id of the call it answers: the one with its id,
// else the first unanswered call of its name in the model turn before.
type geminiPairing struct {
	calls []pendingCall // the current model turn's
}

type pendingCall struct {
	id, name string
	answered bool
}

func (p *geminiPairing) newTurn() { p.calls = nil }

func (p *geminiPairing) call(fc *gFunctionCall, field string) string {
	id := fc.ID
	if id == "" {
		id = rewriteID("call_", fc.Name+"@"+field)
	}
	p.calls = append(p.calls, pendingCall{id: id, name: fc.Name})
	return id
}

func (p *geminiPairing) answer(fr *gFunctionResponse) (string, bool) {
	match := -1
	for i, pc := range p.calls {
		if !pc.answered && fr.ID != "" && pc.id == fr.ID {
			match = i
			break
		}
	}
	for i := 0; match < 0 && i < len(p.calls); i++ {
		if !p.calls[i].answered && p.calls[i].name == fr.Name {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	p.calls[match].answered = true
	return p.calls[match].id, true
}

// geminiParts reads the parts of one content. Thoughts and thought
// signatures are dropped: only Gemini reads them, and Gemini CLI keeps no
// thoughts in its history anyway.
func (c *conv) geminiParts(ps []gPart, role, field string, pairing *geminiPairing) ([]part, error) {
	var parts []part
	for j, p := range ps {
		pf := path(field, j)
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			if role != "assistant" {
				return nil, c.refuse(pf, "a function call in a user turn")
			}
			args := "{}"
			if !isNull(p.FunctionCall.Args) {
				args = string(p.FunctionCall.Args)
			}
			if _, ok := argsObject(args); !ok {
				return nil, c.refuse(pf+".functionCall.args", "arguments are not a JSON object")
			}
			id := pairing.call(p.FunctionCall, pf)
			parts = append(parts, part{kind: callPart, call: toolCall{id: id, name: p.FunctionCall.Name, args: args}})
		case p.FunctionResponse != nil:
			if role != "user" {
				return nil, c.refuse(pf, "a function response in a model turn")
			}
			res, err := c.geminiResult(p.FunctionResponse, pf)
			if err != nil {
				return nil, err
			}
			id, ok := pairing.answer(p.FunctionResponse)
			if !ok {
				return nil, c.refuse(pf, "a response to %q answers no function call of the model turn before", p.FunctionResponse.Name)
			}
			res.id = id
			parts = append(parts, part{kind: resultPart, res: res})
		case p.InlineData != nil:
			if role != "user" {
				return nil, c.refuse(pf, "inline data in a model turn")
			}
			im, err := c.geminiImage(p.InlineData, pf)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{kind: imagePart, img: im})
		case p.FileData != nil:
			return nil, c.refuse(pf+".fileData", "a file stored at Google (%s) cannot be sent to %s", p.FileData.MimeType, name(c.to))
		case p.ExecutableCode != nil || p.CodeExecutionResult != nil:
			return nil, c.refuse(pf, "code execution runs on Google's side")
		case p.Text != nil:
			if *p.Text != "" { // the others refuse empty text blocks
				parts = append(parts, text(*p.Text))
			}
		case p.ThoughtSignature != "":
			// A signature alone (Gemini streams one after its thoughts).
		default:
			return nil, c.refuse(pf, "a part with no content this translation knows")
		}
	}
	return parts, nil
}

func (c *conv) geminiImage(b *gBlob, field string) (image, error) {
	if !strings.HasPrefix(b.MimeType, "image/") {
		return image{}, c.refuse(field+".inlineData", "%s data has no equivalent (images only)", b.MimeType)
	}
	return image{mediaType: b.MimeType, data: b.Data}, nil
}

// geminiResult reads a function response. Gemini CLI answers
// {"output": text} or {"error": text}; any other object is given as its
// JSON text, which is what the model read.
func (c *conv) geminiResult(fr *gFunctionResponse, field string) (toolResult, error) {
	res := toolResult{name: fr.Name}
	var obj map[string]json.RawMessage
	if !isNull(fr.Response) {
		if err := json.Unmarshal(fr.Response, &obj); err != nil {
			return res, fmt.Errorf("translate: %s.functionResponse.response: %w", field, err)
		}
	}
	var s string
	switch {
	case len(obj) == 0:
	case len(obj) == 1 && isString(obj["output"]):
		_ = json.Unmarshal(obj["output"], &s)
	case len(obj) == 1 && isString(obj["error"]):
		_ = json.Unmarshal(obj["error"], &s)
		res.isError = true
	default:
		s = compactArgs(string(fr.Response))
	}
	if s != "" {
		res.parts = append(res.parts, text(s))
	}
	for k, p := range fr.Parts {
		pf := path(field+".functionResponse.parts", k)
		if p.InlineData == nil {
			return res, c.refuse(pf, "a function response part that is not inline data")
		}
		im, err := c.geminiImage(p.InlineData, pf)
		if err != nil {
			return res, err
		}
		res.parts = append(res.parts, part{kind: imagePart, img: im})
	}
	return res, nil
}

func (c *conv) geminiConfig(r *request, g *gGenerationConfig) error {
	if g == nil {
		return nil
	}
	const f = "generationConfig."
	r.temperature, r.topP, r.topK, r.seed = g.Temperature, g.TopP, g.TopK, g.Seed
	r.maxTokens, r.stop, r.maxField = g.MaxOutputTokens, g.StopSequences, "generationConfig.maxOutputTokens"
	switch {
	case g.CandidateCount != nil && *g.CandidateCount > 1:
		return c.refuse(f+"candidateCount", "%d candidates; a translated turn carries one", *g.CandidateCount)
	case g.ResponseMimeType != "" && g.ResponseMimeType != "text/plain":
		return c.refuse(f+"responseMimeType", "%q (structured output) is not translated", g.ResponseMimeType)
	case !isNull(g.ResponseSchema):
		return c.refuse(f+"responseSchema", "structured output is not translated")
	case !isNull(g.ResponseJSONSchema):
		return c.refuse(f+"responseJsonSchema", "structured output is not translated")
	case g.ResponseLogprobs || g.Logprobs != nil:
		return c.refuse(f+"responseLogprobs", "log probabilities are not translated")
	}
	for _, m := range g.ResponseModalities {
		if !strings.EqualFold(m, "TEXT") {
			return c.refuse(f+"responseModalities", "output modality %q", m)
		}
	}
	if th := g.ThinkingConfig; th != nil {
		r.effort = effortFromGemini(th)
	}
	return nil
}

func (c *conv) geminiTools(r *request, tools []gTool) error {
	for i, t := range tools {
		others := make([]string, 0, len(t.Other))
		for k := range t.Other {
			others = append(others, k)
		}
		if len(others) > 0 {
			sort.Strings(others)
			return c.refuse(path("tools", i)+"."+others[0], "a tool Google runs itself has no equivalent")
		}
		for _, fd := range t.FunctionDeclarations {
			schema := fd.ParametersJSONSchema
			if isNull(schema) && !isNull(fd.Parameters) {
				schema = jsonSchemaFromOpenAPI(fd.Parameters)
			}
			r.tools = append(r.tools, tool{name: fd.Name, description: fd.Description, schema: schema})
		}
	}
	return nil
}

// jsonSchemaFromOpenAPI turns the parameters of a function declaration
// (Google's OpenAPI subset, whose types are upper case: "OBJECT") into the
// JSON Schema the other wires take; the rest of the subset is JSON Schema
// already.
func jsonSchemaFromOpenAPI(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && k == "type" {
					t[k] = strings.ToLower(s)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return marshal(v)
}

func (c *conv) geminiToolConfig(r *request, tc *gToolConfig) error {
	if tc == nil || tc.FunctionCallingConfig == nil {
		return nil
	}
	fc := tc.FunctionCallingConfig
	const f = "toolConfig.functionCallingConfig"
	mode := strings.ToUpper(fc.Mode)
	switch {
	case mode == "ANY" && len(fc.AllowedFunctionNames) == 1:
		r.toolChoice = &toolChoice{mode: "tool", name: fc.AllowedFunctionNames[0]}
	case len(fc.AllowedFunctionNames) > 0:
		return c.refuse(f+".allowedFunctionNames", "%d functions allowed in mode %q; %s can force one function or any", len(fc.AllowedFunctionNames), fc.Mode, name(c.to))
	case mode == "ANY":
		r.toolChoice = &toolChoice{mode: "any"}
	case mode == "NONE":
		r.toolChoice = &toolChoice{mode: "none"}
	case mode == "" || mode == "AUTO" || mode == "MODE_UNSPECIFIED" || mode == "VALIDATED":
		r.toolChoice = &toolChoice{mode: "auto"}
	default:
		return c.refuse(f+".mode", "mode %q", fc.Mode)
	}
	return nil
}

// skipSignature is the thought signature Google documents for a function
// call whose own signature is lost (history written by another model):
// Gemini 3 refuses a model turn whose first function call has none, and
// Gemini CLI sends the same value in that case.
const skipSignature = "skip_thought_signature_validator"

// maxStopSequences is the Gemini API's limit.
const maxStopSequences = 5

// writeGemini writes the neutral form as a generateContent request; for
// Code Assist, inside its envelope (without a project: SetCodeAssist puts
// the credential's). The model and the stream flag go in the URL.
func (c *conv) writeGemini(r *request, model string, codeAssist bool) ([]byte, error) {
	out := gRequest{Contents: []gContent{}}
	var system []gPart
	for _, s := range r.system {
		if s != "" {
			system = append(system, gText(s))
		}
	}
	if len(system) > 0 {
		out.SystemInstruction = &gContent{Role: "user", Parts: system}
	}

	// A function response names its function; the other wires name only
	// the call's id.
	names := map[string]string{}
	for _, t := range r.turns {
		for _, p := range t.parts {
			if p.kind == callPart {
				names[p.call.id] = p.call.name
			}
		}
	}
	// Gemini 3 reads the images a tool returned inside its response;
	// earlier models only beside it (Gemini CLI does the same).
	inline := geminiModelFamily(model) == "level"
	for _, t := range r.turns {
		content, err := c.geminiContent(t, names, inline)
		if err != nil {
			return nil, err
		}
		if len(content.Parts) > 0 {
			out.Contents = append(out.Contents, content)
		}
	}

	if len(r.tools) > 0 {
		var decls []gFunctionDecl
		for _, t := range r.tools {
			schema := t.schema
			if isNull(schema) {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			decls = append(decls, gFunctionDecl{Name: t.name, Description: t.description, ParametersJSONSchema: schema})
		}
		out.Tools = []gTool{{FunctionDeclarations: decls}}
		if tc := r.toolChoice; tc != nil {
			fc := &gFunctionCallingConfig{Mode: strings.ToUpper(tc.mode)}
			if tc.mode == "tool" {
				fc.Mode, fc.AllowedFunctionNames = "ANY", []string{tc.name}
			}
			out.ToolConfig = &gToolConfig{FunctionCallingConfig: fc}
		}
		if r.noParallel {
			c.note(c.parallelField(), "dropped: Gemini has no switch for parallel function calls")
		}
	}

	gc, err := c.geminiGeneration(r, model)
	if err != nil {
		return nil, err
	}
	out.GenerationConfig = gc
	if !codeAssist {
		return marshal(out), nil
	}
	// Code Assist keeps Gemini CLI's session id here; the client's user
	// id (hashed when long, as for OpenAI) is the nearest thing.
	out.SessionID = openAIUser(r.user)
	return WrapCodeAssist(marshal(out), CodeAssist{Model: model})
}

func (c *conv) parallelField() string {
	if c.from == Anthropic {
		return "tool_choice.disable_parallel_tool_use"
	}
	return "parallel_tool_calls"
}

func (c *conv) geminiGeneration(r *request, model string) (*gGenerationConfig, error) {
	if len(r.stop) > maxStopSequences {
		return nil, c.refuse(r.stopField, "%d stop sequences; Gemini takes at most %d", len(r.stop), maxStopSequences)
	}
	gc := gGenerationConfig{Temperature: r.temperature, TopP: r.topP, TopK: r.topK, Seed: r.seed,
		MaxOutputTokens: r.maxTokens, StopSequences: r.stop, ThinkingConfig: c.geminiThinking(r, model)}
	if gc.Temperature == nil && gc.TopP == nil && gc.TopK == nil && gc.Seed == nil && gc.MaxOutputTokens == nil &&
		len(gc.StopSequences) == 0 && gc.ThinkingConfig == nil {
		return nil, nil
	}
	return &gc, nil
}

// geminiContent writes one turn. A model turn keeps its order of text and
// calls, the first call carrying the signature Gemini 3 asks for. A user
// turn's function responses go first, as they answer the turn before,
// then the images they returned when inline is false (beside the
// responses), then the user's own parts.
func (c *conv) geminiContent(t turn, names map[string]string, inline bool) (gContent, error) {
	if t.role == "assistant" {
		return c.geminiModelContent(t)
	}

	var responses, images, rest []gPart
	for _, p := range t.parts {
		switch p.kind {
		case textPart:
			if p.text != "" {
				rest = append(rest, gText(p.text))
			}
		case imagePart:
			gp, err := c.geminiImagePart(p.img)
			if err != nil {
				return gContent{}, err
			}
			rest = append(rest, gp)
		case resultPart:
			resp, imgs, err := c.geminiResponse(p, names, inline)
			if err != nil {
				return gContent{}, err
			}
			responses, images = append(responses, resp), append(images, imgs...)
		case callPart:
			return gContent{}, c.refuse("user turn", "a tool call in a user turn")
		}
	}
	parts := append(append(responses, images...), rest...)
	if parts == nil {
		parts = []gPart{}
	}
	return gContent{Role: "user", Parts: parts}, nil
}

// geminiModelContent writes an assistant turn: its text and calls in
// order, the first call signed.
func (c *conv) geminiModelContent(t turn) (gContent, error) {
	content := gContent{Role: "model", Parts: []gPart{}}
	signed := false
	for _, p := range t.parts {
		switch p.kind {
		case textPart:
			if p.text != "" {
				content.Parts = append(content.Parts, gText(p.text))
			}
		case callPart:
			args, ok := argsObject(p.call.args)
			if !ok {
				return content, c.refuse("tool call "+p.call.id, "arguments are not a JSON object: %.80q", p.call.args)
			}
			gp := gPart{FunctionCall: &gFunctionCall{ID: p.call.id, Name: p.call.name, Args: args}}
			if !signed {
				gp.ThoughtSignature, signed = skipSignature, true
			}
			content.Parts = append(content.Parts, gp)
		default:
			return content, c.refuse("assistant turn", "an image in an assistant turn")
		}
	}
	return content, nil
}

// geminiResponse writes one tool result as a function response, with the
// images it returned inside it when inline is true, else apart (images)
// for the turn to carry beside the responses.
func (c *conv) geminiResponse(p part, names map[string]string, inline bool) (gPart, []gPart, error) {
	fname := p.res.name
	if fname == "" {
		fname = names[p.res.id]
	}
	if fname == "" {
		return gPart{}, nil, c.refuse("tool result "+p.res.id, "answers no tool call of the conversation, and Gemini needs the function's name")
	}
	var texts []string
	var own, images []gPart
	for _, rp := range p.res.parts {
		if rp.kind != imagePart {
			texts = append(texts, rp.text)
			continue
		}
		gp, err := c.geminiImagePart(rp.img)
		if err != nil {
			return gPart{}, nil, err
		}
		if inline {
			own = append(own, gp)
		} else {
			images = append(images, gp)
		}
	}
	s := strings.Join(texts, "")
	var resp json.RawMessage
	switch {
	case p.res.isError:
		resp = object(kv{"error", s})
	case s != "":
		resp = object(kv{"output", s})
	default:
		resp = json.RawMessage("{}")
	}
	return gPart{FunctionResponse: &gFunctionResponse{ID: p.res.id, Name: fname, Response: resp, Parts: own}}, images, nil
}

func (c *conv) geminiImagePart(im image) (gPart, error) {
	if im.url != "" {
		return gPart{}, c.refuse("image "+fmt.Sprintf("%.60s", im.url), "an image by URL; Gemini takes inline data or files uploaded to Google")
	}
	return gPart{InlineData: &gBlob{MimeType: im.mediaType, Data: im.data}}, nil
}
