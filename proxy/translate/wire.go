package translate

import "encoding/json"

// The three wires as far as translation reads or writes them. Unions
// (string or array, one struct per block type) stay json.RawMessage or a
// flat struct with a Type, so a field we do not model is never mistaken
// for one we do. Output structs list fields in the upstream's order and
// omit what the upstream omits.

// ---- Anthropic Messages ----

type aRequest struct {
	Model         string          `json:"model"`
	Messages      []aMessage      `json:"messages"`
	System        json.RawMessage `json:"system,omitempty"` // string or []aBlock
	MaxTokens     int             `json:"max_tokens"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Tools         []aTool         `json:"tools,omitempty"`
	ToolChoice    *aToolChoice    `json:"tool_choice,omitempty"`
	Thinking      *aThinking      `json:"thinking,omitempty"`
	OutputConfig  *aOutputConfig  `json:"output_config,omitempty"`
	Metadata      *aMetadata      `json:"metadata,omitempty"`
}

type aMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // string or []aBlock
}

// aBlock is every content block type in one struct; Type says which
// fields mean something.
type aBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *aSource        `json:"source,omitempty"`      // image
	ID        string          `json:"id,omitempty"`          // tool_use
	Name      string          `json:"name,omitempty"`        // tool_use
	Input     json.RawMessage `json:"input,omitempty"`       // tool_use
	ToolUseID string          `json:"tool_use_id,omitempty"` // tool_result
	Content   json.RawMessage `json:"content,omitempty"`     // tool_result: string or []aBlock
	IsError   bool            `json:"is_error,omitempty"`    // tool_result
	Thinking  string          `json:"thinking,omitempty"`    // thinking, read for Gemini clients only

	// refusal marks a text block that is an OpenAI model's refusal
	// (Chat's message.refusal, a Responses refusal part). Anthropic has
	// only the text and stop_reason "refusal"; the mark lets the refusal
	// cross between the two OpenAI wires as one (never marshalled).
	refusal bool
}

type aSource struct {
	Type      string `json:"type"` // base64, url (file and text are refused)
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type aTool struct {
	Type        string          `json:"type,omitempty"` // "" or "custom"; anything else is a server or Anthropic-defined tool
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type aToolChoice struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type aThinking struct {
	Type         string `json:"type"` // enabled, adaptive, disabled
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

type aOutputConfig struct {
	Effort string          `json:"effort,omitempty"`
	Format json.RawMessage `json:"format,omitempty"`
}

type aMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

type aUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens             int `json:"output_tokens"`

	// reasoning is how many of the output tokens an OpenAI model spent
	// reasoning: Anthropic has no such count, so it crosses only between
	// the two OpenAI wires (never marshalled).
	reasoning int
}

// total is what OpenAI calls input tokens: Anthropic counts cached and
// cache-written tokens apart, OpenAI inside prompt/input tokens.
func (u aUsage) totalInput() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

type aResponse struct {
	ID           string   `json:"id"`
	Type         string   `json:"type"`
	Role         string   `json:"role"`
	Model        string   `json:"model"`
	Content      []aBlock `json:"content"`
	StopReason   *string  `json:"stop_reason"`
	StopSequence *string  `json:"stop_sequence"`
	Usage        aUsage   `json:"usage"`
}

type aError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// ---- OpenAI Chat Completions ----

type cRequest struct {
	Model               string          `json:"model"`
	Messages            []cMessage      `json:"messages"`
	Tools               []cTool         `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"` // "auto"|"none"|"required" or cNamedChoice
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Stop                json.RawMessage `json:"stop,omitempty"` // string or []string
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Verbosity           string          `json:"verbosity,omitempty"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
	Seed                *int            `json:"seed,omitempty"`
	User                string          `json:"user,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *cStreamOptions `json:"stream_options,omitempty"`
}

type cStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type cMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"` // string, []cPart or null
	ToolCalls  []cToolCall     `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type cPart struct {
	Type     string     `json:"type"` // text, image_url (input_audio, file, refusal are handled apart)
	Text     string     `json:"text,omitempty"`
	ImageURL *cImageURL `json:"image_url,omitempty"`
	Refusal  string     `json:"refusal,omitempty"`
}

type cImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type cToolCall struct {
	Index    *int      `json:"index,omitempty"` // stream deltas only
	ID       string    `json:"id,omitempty"`
	Type     string    `json:"type,omitempty"`
	Function cFunction `json:"function"`
}

type cFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type cTool struct {
	Type     string       `json:"type"`
	Function cFunctionDef `json:"function"`
}

type cFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type cNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type cUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *cCompletionDetails `json:"completion_tokens_details,omitempty"`
}

type cCompletionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func (u *cUsage) reasoning() int {
	if u == nil || u.CompletionTokensDetails == nil {
		return 0
	}
	return u.CompletionTokensDetails.ReasoningTokens
}

func (u *cUsage) cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// ---- OpenAI Responses ----

type rRequest struct {
	Model             string      `json:"model"`
	Instructions      string      `json:"instructions,omitempty"`
	Input             []rItem     `json:"input"`
	Tools             []rTool     `json:"tools,omitempty"`
	ToolChoice        any         `json:"tool_choice,omitempty"` // "auto"|"none"|"required" or rNamedChoice
	ParallelToolCalls *bool       `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   *int        `json:"max_output_tokens,omitempty"`
	Temperature       *float64    `json:"temperature,omitempty"`
	TopP              *float64    `json:"top_p,omitempty"`
	Reasoning         *rReasoning `json:"reasoning,omitempty"`
	Text              *rText      `json:"text,omitempty"`
	User              string      `json:"user,omitempty"`
	PromptCacheKey    string      `json:"prompt_cache_key,omitempty"`
	Store             *bool       `json:"store,omitempty"`
	Stream            bool        `json:"stream,omitempty"`
}

type rReasoning struct {
	Effort string `json:"effort,omitempty"`
}

type rText struct {
	Format    json.RawMessage `json:"format,omitempty"`
	Verbosity string          `json:"verbosity,omitempty"`
}

// rItem is every input/output item type in one struct.
type rItem struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type,omitempty"` // message, function_call, function_call_output, reasoning…
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // string or []rPart
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"` // a call of a tool in a "namespace" tool (Codex CLI)
	Arguments *string         `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // string or []rPart
}

type rPart struct {
	Type        string          `json:"type"` // input_text, input_image, output_text, refusal…
	Text        string          `json:"text,omitempty"`
	ImageURL    string          `json:"image_url,omitempty"`
	FileID      string          `json:"file_id,omitempty"`
	Detail      string          `json:"detail,omitempty"`
	Refusal     string          `json:"refusal,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

type rTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type rNamedChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type rUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type rResponse struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *rIncomplete    `json:"incomplete_details"`
	Model             string          `json:"model"`
	Output            []rItem         `json:"output"`
	Usage             *rUsage         `json:"usage"`
}

type rIncomplete struct {
	Reason string `json:"reason"`
}

// usage conversions: OpenAI counts cached tokens inside input tokens,
// Anthropic apart.

func anthropicUsageFromChat(u *cUsage) aUsage {
	if u == nil {
		return aUsage{}
	}
	cached := u.cached()
	return aUsage{InputTokens: u.PromptTokens - cached, CacheReadInputTokens: cached, OutputTokens: u.CompletionTokens,
		reasoning: u.reasoning()}
}

func anthropicUsageFromResponses(u *rUsage) aUsage {
	if u == nil {
		return aUsage{}
	}
	cached := u.InputTokensDetails.CachedTokens
	return aUsage{InputTokens: u.InputTokens - cached, CacheReadInputTokens: cached, OutputTokens: u.OutputTokens,
		reasoning: u.OutputTokensDetails.ReasoningTokens}
}

func chatUsage(u aUsage) *cUsage {
	in := u.totalInput()
	cu := &cUsage{PromptTokens: in, CompletionTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
	cu.PromptTokensDetails = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{u.CacheReadInputTokens}
	if u.reasoning > 0 {
		cu.CompletionTokensDetails = &cCompletionDetails{ReasoningTokens: u.reasoning}
	}
	return cu
}

func responsesUsage(u aUsage) *rUsage {
	in := u.totalInput()
	ru := &rUsage{InputTokens: in, OutputTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
	ru.InputTokensDetails.CachedTokens = u.CacheReadInputTokens
	ru.OutputTokensDetails.ReasoningTokens = u.reasoning
	return ru
}
