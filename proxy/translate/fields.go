package translate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Every top-level request field of a source wire has a fate. Fields
// handled by a reader are "read"; the rest are decided here so that
// docs/translation.md and the code can be checked against one table. A
// reason may name the target's side with %s ("Claude", "OpenAI",
// "Gemini"); pairRules changes a fate where one target takes what the
// others drop.
type fate int

const (
	read   fate = iota // the reader maps it (and may still refuse a value)
	silent             // an optimisation or bookkeeping: dropped, no note
	noted              // tunes the answer: dropped with a note
	refuse             // changes meaning: the request is refused
)

type rule struct {
	fate fate
	why  string
}

var anthropicFields = map[string]rule{
	"model": {read, ""}, "messages": {read, ""}, "system": {read, ""},
	"max_tokens": {read, ""}, "temperature": {read, ""}, "top_p": {read, ""},
	"stop_sequences": {read, ""}, "stream": {read, ""}, "tools": {read, ""},
	"tool_choice": {read, ""}, "thinking": {read, ""}, "output_config": {read, ""},
	"metadata": {read, ""},

	"service_tier":       {silent, ""},
	"top_k":              {noted, "OpenAI has no top_k sampling"},
	"context_management": {noted, "server-side context editing is Anthropic's; the full context is sent"},
	"container":          {refuse, "code-execution containers exist only on Anthropic"},
	"mcp_servers":        {refuse, "remote MCP servers are called by Anthropic's API, not the model"},
}

var chatFields = map[string]rule{
	"model": {read, ""}, "messages": {read, ""}, "tools": {read, ""},
	"tool_choice": {read, ""}, "parallel_tool_calls": {read, ""},
	"max_tokens": {read, ""}, "max_completion_tokens": {read, ""},
	"temperature": {read, ""}, "top_p": {read, ""}, "stop": {read, ""},
	"stream": {read, ""}, "stream_options": {read, ""}, "user": {read, ""},
	"safety_identifier": {read, ""}, "n": {read, ""}, "response_format": {read, ""},
	"logprobs": {read, ""}, "top_logprobs": {read, ""}, "modalities": {read, ""},

	"store": {silent, ""}, "metadata": {silent, ""}, "prompt_cache_key": {silent, ""},
	"prompt_cache_retention": {silent, ""}, "service_tier": {silent, ""}, "prediction": {silent, ""},
	"reasoning_effort":   {noted, "a reasoning effort is not carried to Claude (see docs/translation.md: thinking)"},
	"verbosity":          {noted, "%s has no verbosity setting"},
	"seed":               {noted, "%s has no sampling seed"},
	"presence_penalty":   {noted, "%s has no presence penalty"},
	"frequency_penalty":  {noted, "%s has no frequency penalty"},
	"logit_bias":         {noted, "%s has no logit bias"},
	"functions":          {refuse, "legacy function calling; use tools"},
	"function_call":      {refuse, "legacy function calling; use tool_choice"},
	"audio":              {refuse, "audio answers are not translated"},
	"web_search_options": {refuse, "web search is an OpenAI-hosted tool"},
}

var responsesFields = map[string]rule{
	"model": {read, ""}, "input": {read, ""}, "instructions": {read, ""},
	"tools": {read, ""}, "tool_choice": {read, ""}, "parallel_tool_calls": {read, ""},
	"max_output_tokens": {read, ""}, "temperature": {read, ""}, "top_p": {read, ""},
	"stream": {read, ""}, "user": {read, ""}, "safety_identifier": {read, ""},
	"text": {read, ""}, "top_logprobs": {read, ""},

	"store": {silent, ""}, "include": {silent, ""}, "metadata": {silent, ""},
	"prompt_cache_key": {silent, ""}, "prompt_cache_retention": {silent, ""},
	"service_tier": {silent, ""}, "stream_options": {silent, ""}, "client_metadata": {silent, ""},
	"reasoning":            {noted, "a reasoning effort is not carried to Claude (see docs/translation.md: thinking)"},
	"truncation":           {noted, "%s never truncates the context; an over-long one is refused upstream"},
	"max_tool_calls":       {noted, "%s has no cap on hosted tool calls, and none are offered"},
	"previous_response_id": {refuse, "the earlier turns are stored at OpenAI and cannot be sent to %s"},
	"conversation":         {refuse, "the conversation is stored at OpenAI and cannot be sent to %s"},
	"prompt":               {refuse, "prompt templates are stored at OpenAI"},
	"background":           {refuse, "background responses are an OpenAI service"},
}

var geminiFields = map[string]rule{
	"contents": {read, ""}, "systemInstruction": {read, ""}, "tools": {read, ""},
	"toolConfig": {read, ""}, "generationConfig": {read, ""},

	// session_id is Code Assist's: Gemini CLI's session, read as the
	// end user. labels bill a Vertex request; model names the resource
	// some SDKs repeat.
	"session_id": {read, ""},
	"labels":     {silent, ""}, "model": {silent, ""},
	"safetySettings": {noted, "safety thresholds are Google's; %s applies its own"},
	"cachedContent":  {refuse, "cached content is stored at Google and cannot be sent to %s"},
}

// geminiConfigFields are generationConfig's, checked like top-level
// fields.
var geminiConfigFields = map[string]rule{
	"temperature": {read, ""}, "topP": {read, ""}, "topK": {read, ""},
	"maxOutputTokens": {read, ""}, "stopSequences": {read, ""}, "candidateCount": {read, ""},
	"seed": {read, ""}, "thinkingConfig": {read, ""}, "responseMimeType": {read, ""},
	"responseSchema": {read, ""}, "responseJsonSchema": {read, ""}, "responseModalities": {read, ""},
	"responseLogprobs": {read, ""}, "logprobs": {read, ""},

	"audioTimestamp": {silent, ""}, "routingConfig": {silent, ""}, "modelSelectionConfig": {silent, ""},
	"enableEnhancedCivicAnswers": {silent, ""}, "enableAffectiveDialog": {silent, ""},
	"presencePenalty":  {noted, "the penalty is not carried"},
	"frequencyPenalty": {noted, "the penalty is not carried"},
	"mediaResolution":  {noted, "image resolution is Gemini's setting; %s decides its own"},
	"imageConfig":      {noted, "image output is not asked for"},
	"speechConfig":     {refuse, "spoken answers are not translated"},
}

// pairRules override a source's table for one target wire: the fields a
// target takes that the others drop, and reasons that differ.
var pairRules = map[[2]Target]map[string]rule{
	{Anthropic, Gemini}: {"top_k": {read, ""}},
	{OpenAIChat, Gemini}: {
		"reasoning_effort": {read, ""}, "seed": {read, ""},
		// Gemini has both, but some models refuse them with a 400.
		"presence_penalty":  {noted, "not every Gemini model takes a presence penalty"},
		"frequency_penalty": {noted, "not every Gemini model takes a frequency penalty"},
	},
	{OpenAIResponses, Gemini}: {"reasoning": {read, ""}},
	// The two OpenAI wires share their settings under other names; what
	// one has and the other lacks is said in its own words.
	{OpenAIChat, OpenAIResponses}: {
		"reasoning_effort": {read, ""}, "verbosity": {read, ""}, "prompt_cache_key": {read, ""},
		"seed":              {noted, "the Responses API has no sampling seed"},
		"presence_penalty":  {noted, "the Responses API has no presence penalty"},
		"frequency_penalty": {noted, "the Responses API has no frequency penalty"},
		"logit_bias":        {noted, "the Responses API has no logit bias"},
	},
	{OpenAIResponses, OpenAIChat}: {
		"reasoning":            {read, ""},
		"truncation":           {noted, "Chat Completions never truncates the context; an over-long one is refused upstream"},
		"max_tool_calls":       {noted, "Chat Completions has no cap on hosted tool calls, and none are offered"},
		"previous_response_id": {refuse, "the earlier turns are stored at OpenAI and cannot be sent to a Chat Completions upstream"},
		"conversation":         {refuse, "the conversation is stored at OpenAI and cannot be sent to a Chat Completions upstream"},
	},
	{Gemini, Anthropic}: {
		"generationConfig.seed": {noted, "%s has no sampling seed"},
		// Claude's thinking blocks carry signatures it requires back in
		// the next turn of a tool loop, and Gemini CLI keeps no thoughts
		// in its history: thinking stays off, as for OpenAI clients.
		"generationConfig.thinkingConfig": {noted, "thinking is not enabled on Claude, whose thinking blocks must come back on the next turn and a Gemini client sends no thoughts back"},
	},
	{Gemini, OpenAIChat}: {"generationConfig.topK": {noted, "%s has no top_k sampling"}},
	{Gemini, OpenAIResponses}: {
		"generationConfig.topK": {noted, "%s has no top_k sampling"},
		"generationConfig.seed": {noted, "the Responses API has no sampling seed"},
	},
}

// checkFields applies the table to the body's top-level fields. A null
// value is treated as absent, as the APIs do.
func (c *conv) checkFields(body []byte, table map[string]rule) (map[string]json.RawMessage, error) {
	return c.checkFieldsAt(body, table, "")
}

// checkFieldsAt applies the table to the fields of the object body, whose
// path is prefix ("generationConfig."); the pair's rules go first.
func (c *conv) checkFieldsAt(body []byte, table map[string]rule, prefix string) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("translate: %s request body: %w", c.from, err)
	}
	pair := pairRules[[2]Target{wire(c.from), wire(c.to)}]
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic notes and first refusal
	for _, k := range keys {
		if isNull(top[k]) {
			delete(top, k)
			continue
		}
		field := prefix + k
		r, known := table[k]
		if o, ok := pair[field]; ok {
			r, known = o, true
		}
		why := r.why
		if strings.Contains(why, "%s") {
			why = fmt.Sprintf(why, name(c.to))
		}
		switch {
		case !known:
			c.note(field, "unknown field dropped")
		case r.fate == noted:
			c.note(field, "dropped: %s", why)
		case r.fate == refuse:
			return nil, c.refuse(field, "%s", why)
		}
	}
	return top, nil
}
