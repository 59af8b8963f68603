package translate

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Every top-level request field of a source wire has a fate. Fields
// handled by a reader are "read"; the rest are decided here so that
// docs/translation.md and the code can be checked against one table.
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
	"verbosity":          {noted, "Claude has no verbosity setting"},
	"seed":               {noted, "Claude has no sampling seed"},
	"presence_penalty":   {noted, "Claude has no presence penalty"},
	"frequency_penalty":  {noted, "Claude has no frequency penalty"},
	"logit_bias":         {noted, "Claude has no logit bias"},
	"functions":          {refuse, "legacy function calling; use tools"},
	"function_call":      {refuse, "legacy function calling; use tool_choice"},
	"audio":              {refuse, "Claude does not answer in audio"},
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
	"truncation":           {noted, "Claude never truncates the context; an over-long one is refused upstream"},
	"max_tool_calls":       {noted, "Claude has no cap on hosted tool calls, and none are offered"},
	"previous_response_id": {refuse, "the earlier turns are stored at OpenAI and cannot be sent to Claude"},
	"conversation":         {refuse, "the conversation is stored at OpenAI and cannot be sent to Claude"},
	"prompt":               {refuse, "prompt templates are stored at OpenAI"},
	"background":           {refuse, "background responses are an OpenAI service"},
}

// checkFields applies the table to the body's top-level fields. A null
// value is treated as absent, as the APIs do.
func (c *conv) checkFields(body []byte, table map[string]rule) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("translate: %s request body: %w", c.from, err)
	}
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
		r, known := table[k]
		switch {
		case !known:
			c.note(k, "unknown field dropped")
		case r.fate == noted:
			c.note(k, "dropped: %s", r.why)
		case r.fate == refuse:
			return nil, c.refuse(k, "%s", r.why)
		}
	}
	return top, nil
}
