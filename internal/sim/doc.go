// Package sim is a simulated upstream: Anthropic Messages, OpenAI
// Responses and Chat Completions, the ChatGPT Codex backend, the Gemini
// API and Google's Code Assist, as JSON and as SSE, with the bodies and
// headers the real services send. The proxy's tests, `subpool demo` and
// the benchmarks all point at it, so it must be realistic enough that
// Claude Code, Codex CLI and Gemini CLI accept its answers, scriptable
// enough that a test can make any credential fail in any way, and cheap
// enough not to dominate a benchmark.
//
// # Routes
//
//	POST /v1/messages                    Anthropic message or SSE
//	POST /v1/messages/count_tokens       {"input_tokens":N}
//	POST /v1/responses                   Responses object or SSE
//	POST /backend-api/codex/responses    the same, as the ChatGPT backend: stream only,
//	                                     instructions required, no max_output_tokens
//	                                     (400 {"detail"} otherwise; codex.go)
//	GET  /backend-api/codex/models       the models a ChatGPT plan serves (?client_version=)
//	POST /v1/chat/completions            chat.completion or chunk SSE + [DONE]
//	GET  /v1/models                      OpenAI model list
//	POST /v1/embeddings                  unit vectors, float or base64
//	GET  /api/oauth/usage                Claude plan usage (usage.go)
//	GET  /backend-api/wham/usage         ChatGPT plan usage
//
// Google (gemini.go, codeassist.go), keyed by an x-goog-api-key (or
// ?key=) on the Gemini API and a bearer token on Code Assist:
//
//	POST /v1beta/models/{model}:generateContent        GenerateContentResponse
//	POST /v1beta/models/{model}:streamGenerateContent  ?alt=sse: data-only
//	                                     events, CRLF; else a JSON array
//	POST /v1beta/models/{model}:countTokens            {"totalTokens":N}
//	GET  /v1beta/models, /v1beta/models/{model}        the model list, a model
//	POST /v1internal:loadCodeAssist      tiers and the login's project
//	POST /v1internal:onboardUser         an operation creating the project
//	GET  /v1internal/{operation}         that operation, done when polled
//	POST /v1internal:generateContent     {"response":{…},"traceId"}
//	POST /v1internal:streamGenerateContent  the same per SSE event
//	POST /v1internal:countTokens         {"totalTokens":N}
//	POST /v1internal:retrieveUserQuota   per-model buckets of the login's day
//	POST /v1internal:listExperiments     no experiments
//	POST /v1internal:recordCodeAssistMetrics, :fetchAdminControls   {}
//	GET  /v1internal:getCodeAssistGlobalUserSetting
//	POST /v1internal:setCodeAssistGlobalUserSetting
//
// Errors take the provider's shape by path: Anthropic for /v1/messages*,
// Google's google.rpc.Status for /v1beta/models* and /v1internal*, OpenAI
// for everything else. An unknown path (or method) is a 404, a request
// without x-api-key or "Authorization: Bearer" a 401, a body that is not
// JSON a 400, all in that shape. The credential is the secret the request
// carried; everything per-credential below is keyed by it.
//
// Google refuses secrets it never issued, so a Google credential must be
// registered: AddGoogleKey for a Gemini API key (any other is a 400
// API_KEY_INVALID; none at all a 403 PERMISSION_DENIED), AddGoogleLogin or
// the OAuth server's GrantGoogle and token endpoint for a login (an
// unknown or expired bearer is a 401 UNAUTHENTICATED). A Code Assist call
// whose "project" is not its login's is a 403 PERMISSION_DENIED, so the
// proxy must put the right project in. Code Assist's setup and telemetry
// calls take no scripted step and no quota; retrieveUserQuota is its
// usage poll (ScriptUsage).
//
// # What a success looks like
//
// Options sets the shape of every success: Latency before the headers,
// Chunks deltas of ChunkText each, ChunkInterval between SSE events. A
// JSON answer says ChunkText Chunks times. `"stream": true` in the body
// picks SSE. Every event is flushed on its own; Options.BeforeEvent runs
// before each one, so a test can hold a stream at a given event and prove
// the events leave one by one. Options.Stamp adds the wall-clock emit time
// to each event for latency benchmarks.
//
// A request that offers tools and either sends "x-sim-tool: 1" or whose
// last turn is a user message saying "use the tool" gets a tool call to
// the first tool instead (Anthropic tool_use with input_json_delta,
// Responses function_call, Chat Completions tool_calls), its arguments
// filling the schema's required properties. A tool result coming back is
// answered with text, so an agent loop ends.
//
// A Gemini request offering functionDeclarations follows the same rule
// (a functionCall part, whole in one chunk, with a thoughtSignature), and
// one asking for responseMimeType application/json gets a JSON object
// filling its schema's required properties.
//
// Successes carry the rate-limit headers of a real tier
// (anthropic-ratelimit-*, x-ratelimit-*), counted per credential over a
// one-minute window; Google's carry none (a login's day is read from
// retrieveUserQuota). SetUtilization adds subscription usage
// (anthropic-ratelimit-unified-*, x-codex-primary-*/-secondary-*) to every
// answer of a credential, errors included, as upstream does.
//
// # Making credentials fail
//
// Script queues Steps for a credential, consumed one per request in order
// (a Step with Model set waits for a request of that model); Always
// answers one Step to every request until Clear. A Step can be an error
// status with a raw or canned body, a Delay (a timeout, when the client
// gives up first), a Drop (connection closed, no answer), a CutAfter (the
// stream breaks after N deltas) or a StreamError (a 200 whose first event
// is an error). The canned steps (RateLimited, Overloaded, ServerError,
// UsageLimitReached, UnifiedLimitReached, SpendLimitReached, Unauthorized,
// TokenExpired, StreamOverloaded; for Google also GoogleDailyLimit,
// GoogleCapacityExhausted, GoogleNoCapacity, GoogleOverloaded,
// GooglePermissionDenied) carry the real bodies and headers, with reset
// times computed on Options.Clock when the answer is served. A canned
// Google step answers in the shape of the route it lands on (the Gemini
// API's QuotaFailure, Code Assist's ErrorInfo), and on Code Assist's
// streamGenerateContent as the one-element JSON array that method sends.
//
// SetQuota gives a credential a budget of requests and/or tokens per
// fixed window on Options.Clock. Over budget it answers 429 — with the
// exact reset announced, or bare, per Quota.Announce — until the window
// ends. Scripted steps come first; the quota only charges successes. A
// Google login also has its day (GoogleLogin.DailyRequests per model):
// spent, it answers Code Assist's QUOTA_EXHAUSTED until the day ends.
//
// # Time
//
// Options.Clock stamps records, runs quota windows and utilization resets
// and supplies every time written on the wire. Waits (Latency, Delay,
// ChunkInterval) are wall time: a fake clock nobody advances would
// otherwise freeze every stream. A test that needs ordering uses
// BeforeEvent, WaitRequests and WaitCancelled, never a sleep.
//
// # Records
//
// Every request is recorded on arrival, before any wait, with the
// credential, path, model, stream flag, headers, body and the status the
// sim chose for it; Cancelled is set once the client leaves early.
// WaitRequests and WaitCancelled block on those counts. Reset forgets
// records and all per-credential settings (a Google login's day
// included; its registration stays). For long benchmark runs,
// Options.DiscardBodies keeps records small.
package sim
