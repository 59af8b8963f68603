package translate

import "encoding/json"

// ---- Gemini generateContent ----
//
// The Gemini API (generativelanguage.googleapis.com/v1beta) and the Code
// Assist API behind a Google login (cloudcode-pa.googleapis.com/v1internal)
// share these types; Code Assist wraps them in an envelope (codeassist.go).
// Field names are the REST JSON ones, which is what Gemini CLI sends.

type gRequest struct {
	Contents          []gContent         `json:"contents"`
	SystemInstruction *gContent          `json:"systemInstruction,omitempty"`
	Tools             []gTool            `json:"tools,omitempty"`
	ToolConfig        *gToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *gGenerationConfig `json:"generationConfig,omitempty"`
	// SessionID is Code Assist's: Gemini CLI sends its session there.
	SessionID string `json:"session_id,omitempty"`
}

type gContent struct {
	Role  string  `json:"role,omitempty"` // user or model
	Parts []gPart `json:"parts"`
}

// gPart is every part type in one struct; which field is set says which
// it is. Text is a pointer because a present empty text (a part that only
// carries a thoughtSignature) differs from none.
type gPart struct {
	Text                *string            `json:"text,omitempty"`
	Thought             bool               `json:"thought,omitempty"`
	InlineData          *gBlob             `json:"inlineData,omitempty"`
	FileData            *gFileData         `json:"fileData,omitempty"`
	FunctionCall        *gFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *gFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature    string             `json:"thoughtSignature,omitempty"`
	ExecutableCode      json.RawMessage    `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage    `json:"codeExecutionResult,omitempty"`
	VideoMetadata       json.RawMessage    `json:"videoMetadata,omitempty"`
}

func gText(s string) gPart { return gPart{Text: &s} }

type gBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

type gFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type gFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"` // an object
}

type gFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"` // an object
	// Parts are what a multimodal function response returned beside its
	// object (Gemini 3: images a tool read).
	Parts []gPart `json:"parts,omitempty"`
}

// gTool is one entry of tools: function declarations, or one of the
// tools Google runs itself (googleSearch, codeExecution, urlContext…),
// which Other collects.
type gTool struct {
	FunctionDeclarations []gFunctionDecl            `json:"functionDeclarations,omitempty"`
	Other                map[string]json.RawMessage `json:"-"`
}

func (t *gTool) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if fd, ok := m["functionDeclarations"]; ok {
		if err := json.Unmarshal(fd, &t.FunctionDeclarations); err != nil {
			return err
		}
		delete(m, "functionDeclarations")
	}
	for k, v := range m {
		if isNull(v) {
			delete(m, k)
		}
	}
	t.Other = m
	return nil
}

type gFunctionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // OpenAPI subset, upper-case types
	// ParametersJSONSchema is a full JSON Schema; Gemini CLI sends its
	// tools this way, and so does a translation.
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gToolConfig struct {
	FunctionCallingConfig *gFunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

type gFunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"` // AUTO, ANY, NONE, VALIDATED
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gGenerationConfig struct {
	Temperature     *float64         `json:"temperature,omitempty"`
	TopP            *float64         `json:"topP,omitempty"`
	TopK            *int             `json:"topK,omitempty"`
	CandidateCount  *int             `json:"candidateCount,omitempty"`
	MaxOutputTokens *int             `json:"maxOutputTokens,omitempty"`
	StopSequences   []string         `json:"stopSequences,omitempty"`
	Seed            *int             `json:"seed,omitempty"`
	ThinkingConfig  *gThinkingConfig `json:"thinkingConfig,omitempty"`

	// Read only to be refused: structured output and other modalities.
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseModalities []string        `json:"responseModalities,omitempty"`
	ResponseLogprobs   bool            `json:"responseLogprobs,omitempty"`
	Logprobs           *int            `json:"logprobs,omitempty"`
}

type gThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"` // -1: dynamic, 0: off
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`  // Gemini 3: LOW, HIGH (MINIMAL, MEDIUM on Flash)
}

type gResponse struct {
	Candidates     []gCandidate     `json:"candidates"`
	PromptFeedback *gPromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *gUsage          `json:"usageMetadata,omitempty"`
	ModelVersion   string           `json:"modelVersion,omitempty"`
	ResponseID     string           `json:"responseId,omitempty"`
}

type gCandidate struct {
	Content      *gContent `json:"content,omitempty"`
	FinishReason string    `json:"finishReason,omitempty"`
	Index        int       `json:"index"`
}

type gPromptFeedback struct {
	BlockReason string `json:"blockReason,omitempty"`
}

// gUsage counts cached tokens inside promptTokenCount, like OpenAI, and
// thoughts apart from candidates (both are billed as output).
type gUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
}

func anthropicUsageFromGemini(u *gUsage) aUsage {
	if u == nil {
		return aUsage{}
	}
	return aUsage{InputTokens: u.PromptTokenCount - u.CachedContentTokenCount, CacheReadInputTokens: u.CachedContentTokenCount,
		OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
}

func geminiUsage(u aUsage) *gUsage {
	in := u.totalInput()
	return &gUsage{PromptTokenCount: in, CandidatesTokenCount: u.OutputTokens, TotalTokenCount: in + u.OutputTokens,
		CachedContentTokenCount: u.CacheReadInputTokens}
}

// gError is Google's error body, and what a Gemini stream sends in place
// of a chunk when it fails.
type gError struct {
	Error struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Status  string          `json:"status"`
		Details json.RawMessage `json:"details,omitempty"`
	} `json:"error"`
}
