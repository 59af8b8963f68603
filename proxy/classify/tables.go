package classify

// The provider tables. Each rule says: when the status is one of these,
// an error code in the body is one of these, and the message contains one
// of these phrases, the response is this class. Empty conditions match
// anything; all given conditions must hold. Rules are tried in order and
// the first match wins, so specific rules (a spend cap wearing
// rate_limit_error) come before general ones (rate_limit_error).
//
// Codes are compared with every identifier the body carries: error.type,
// error.code, error.details.error_code, a top-level "error" string (OAuth
// token endpoints), "code" and "codex_error_info", and Google's
// error.status and ErrorInfo reasons. A rule may also ask what a Google
// refusal says of its spent quotas (gq: daily, per minute, of size 0),
// which no single identifier carries. Phrases are matched
// case-insensitively against the upstream's message (against the whole
// body when it is not readable JSON). When no rule matches, the status
// decides (statusRules).
//
// The rules rest on real answers kept in testdata/corpus (each with the
// issue or page it came from) and, where no answer was published, on the
// provider's own error list cited above its table. docs/providers.md says
// the same in prose. Change the three together.

type rule struct {
	status []int
	codes  []string
	text   []string // lower case
	class  Class
	scope  Scope
	why    string
	// tool: the refusal is about the requesting tool, not the
	// credential (Verdict.Tool); only on client_error rules.
	tool bool
	gq   googleQuota
}

// oauthRules are the answers of OAuth token endpoints and of APIs that
// refuse an access token. They are the same words at Anthropic and OpenAI
// (RFC 6749 plus OpenAI's own codes).
var oauthRules = []rule{
	{codes: []string{"invalid_grant", "refresh_token_reused", "refresh_token_expired", "refresh_token_invalidated",
		"token_invalidated", "token_revoked", "invalid_refresh_token"},
		class: AuthInvalid, scope: ScopeCredential, why: "login no longer valid; log in again"},
	{codes: []string{"token_expired"}, class: AuthExpired, scope: ScopeCredential, why: "access token expired"},
	{status: []int{401}, text: []string{"token has expired", "token is expired", "token expired"},
		class: AuthExpired, scope: ScopeCredential, why: "access token expired"},
	{text: []string{"has been revoked", "token revoked", "has been invalidated"},
		class: AuthInvalid, scope: ScopeCredential, why: "login revoked; log in again"},
}

// regionRules are the refusals of a location the provider does not serve.
// They reach as far as the egress address (ScopeProvider): the pool parks
// every credential that leaves from it, with the advice to set [network]
// proxy. Each wording is the provider's own, from the samples in the corpus.
var regionRules = []rule{
	// OpenAI (the API, the ChatGPT backend and its token endpoint): a 403
	// request_forbidden with this code (home-assistant/core#120072,
	// continuedev/continue#11449, jlcodes99/cockpit-tools#611).
	{codes: []string{"unsupported_country_region_territory"}, class: RegionBlocked, scope: ScopeProvider,
		why: "OpenAI does not serve this network's country or region; set [network] proxy"},
	{text: []string{"country, region, or territory not supported"}, class: RegionBlocked, scope: ScopeProvider,
		why: "OpenAI does not serve this network's country or region; set [network] proxy"},
	// Anthropic's edge answers an unsupported country with a bare 403
	// {"type":"forbidden","message":"Request not allowed"}, before any key
	// is looked at (anthropics/claude-code#1613, answered "Claude Code is
	// only available in supported countries"; anthropic-sdk-typescript#457).
	{status: []int{403}, codes: []string{"forbidden"}, text: []string{"request not allowed"}, class: RegionBlocked, scope: ScopeProvider,
		why: "Anthropic refuses requests from this network's location; set [network] proxy"},
	// Google: 400 FAILED_PRECONDITION "User location is not supported for
	// the API use." (google-gemini/gemini-cli#1993, poenl/gemini-api#4).
	{codes: []string{"FAILED_PRECONDITION"}, text: []string{"user location is not supported"}, class: RegionBlocked, scope: ScopeProvider,
		why: "Google does not serve the Gemini API in this network's location; set [network] proxy"},
}

// anthropicRules: Anthropic API keys and Claude subscriptions
// (docs.claude.com/en/api/errors and the samples in the corpus).
var anthropicRules = []rule{
	// A Claude subscription's OAuth token is meant for Claude Code.
	// Another tool's request is refused outright when its system prompt
	// does not start with Claude Code's identity, or billed as extra
	// usage and refused when there is none. The login goes on serving
	// Claude Code, so these refusals concern the tool: client errors
	// marked tool, never a cooldown or a park. They wear
	// invalid_request_error and come first.
	{text: []string{"only authorized for use with claude code"},
		class: ClientError, tool: true, why: "this subscription serves Claude Code only; the requesting tool was refused"},
	{text: []string{"third-party apps now draw from your extra usage", "out of extra usage"},
		class: ClientError, tool: true, why: "Anthropic bills this tool's use of the subscription as extra usage, and there is none"},
	// A long-context (1M) request on a subscription needs usage credits:
	// a 429 rate_limit_error, yet about the request, not the account,
	// whose plan windows may be nearly unused. Claude Code does not retry
	// it (its bundled cli checks details.error_code "credits_required" and
	// these two phrases). No wait or rotation makes the request pass, so
	// it goes back to the client.
	{codes: []string{"credits_required"}, class: ClientError, why: "the request needs usage credits (long context); the login still serves others"},
	{text: []string{"usage credits are required", "extra usage is required"},
		class: ClientError, why: "the request needs usage credits (long context); the login still serves others"},

	// Billing wears many coats: a 402 billing_error, a 400
	// invalid_request_error about credit, a 429 rate_limit_error whose
	// details say enforced_spend_limit_reached. None lifts by waiting.
	{codes: []string{"billing_error"}, class: Payment, scope: ScopeCredential, why: "billing problem on the account"},
	{codes: []string{"enforced_spend_limit_reached"}, class: Payment, scope: ScopeCredential, why: "spend limit reached"},
	{text: []string{"credit balance is too low"}, class: Payment, scope: ScopeCredential, why: "credit balance too low"},
	{text: []string{"api usage limits", "spend limit"},
		class: Payment, scope: ScopeCredential, why: "spend limit reached"},

	{codes: []string{"overloaded_error"}, class: Capacity, why: "model overloaded for everyone"},
	{codes: []string{"rate_limit_error"}, class: RateLimit, scope: ScopeCredential, why: "account rate limit"},

	{codes: []string{"authentication_error"}, class: AuthInvalid, scope: ScopeCredential, why: "key or token refused"},
	// An organization that does not allow OAuth refuses every request of
	// the login (a 403 permission_error): the login is of no use until
	// that changes or the person logs in to another account.
	{text: []string{"oauth authentication is currently not allowed"},
		class: AuthInvalid, scope: ScopeCredential, why: "this organization does not allow OAuth logins"},
	// permission_error is mostly "this key may not use that resource":
	// the request's problem, not a dead credential. Revocations are
	// caught above by their wording.
	{codes: []string{"permission_error"}, class: ClientError, why: "not allowed for this credential"},

	{codes: []string{"request_too_large"}, class: ClientError, why: "request too large"},
	{codes: []string{"not_found_error"}, class: ClientError, why: "not found"},
	{codes: []string{"api_error", "timeout_error"}, class: Transient, why: "server error"},
	{status: []int{400, 404, 405, 413, 415, 422}, codes: []string{"invalid_request_error"},
		class: ClientError, why: "invalid request"},
}

// openaiRules: the OpenAI API (platform.openai.com/docs/guides/error-codes).
var openaiRules = []rule{
	// insufficient_quota shares the 429 with real rate limits; its type
	// or its code says billing (type alone on older answers).
	{codes: []string{"insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded", "billing_hard_limit_reached",
		"billing_not_active"},
		class: Payment, scope: ScopeCredential, why: "quota or billing exhausted"},
	{text: []string{"exceeded your current quota", "you have no credits remaining", "insufficient balance", "no resource package"},
		class: Payment, scope: ScopeCredential, why: "quota or billing exhausted"},
	// "Request too large for gpt-4o … on tokens per min: Limit 30000,
	// Requested 30601" comes as a 429 rate_limit_exceeded, but no wait
	// makes the request fit.
	{text: []string{"request too large for"}, class: ClientError, why: "request larger than the rate limit allows"},
	{codes: []string{"server_is_overloaded", "engine_overloaded_error"}, class: Capacity, why: "servers overloaded"},
	// A 503 slow_down is the service shedding load, not this account's
	// limit: Codex reads it exactly as server_is_overloaded
	// (codex-rs/codex-api/src/api_bridge.rs), and a rotation only moves
	// the same load to the next credential. Under another status the
	// code keeps its older meaning below.
	{status: []int{503}, codes: []string{"slow_down"}, class: Capacity, why: "service overloaded; slow down"},
	{text: []string{"at capacity", "currently overloaded", "is overloaded with other requests", "temporarily overloaded"},
		class: Capacity, why: "servers overloaded"},
	// slow_down outside a 503 is read as a relay means it: this
	// account asked to ramp down, cured like a rate limit.
	{codes: []string{"rate_limit_exceeded", "slow_down", "rate_limit_error"},
		class: RateLimit, scope: ScopeCredential, why: "rate limit"},
	{codes: []string{"invalid_api_key", "account_deactivated", "invalid_organization"},
		class: AuthInvalid, scope: ScopeCredential, why: "API key refused"},
	{text: []string{"incorrect api key"}, class: AuthInvalid, scope: ScopeCredential, why: "API key refused"},
	{codes: []string{"context_length_exceeded", "string_above_max_length", "invalid_prompt", "model_not_found",
		"invalid_value", "cyber_policy"},
		class: ClientError, why: "invalid request"},
	{codes: []string{"server_error", "internal_error"}, class: Transient, why: "server error"},
	{status: []int{400, 404, 405, 413, 415, 422}, codes: []string{"invalid_request_error"},
		class: ClientError, why: "invalid request"},
}

// codexRules: the ChatGPT backend Codex talks to
// (chatgpt.com/backend-api/codex; openai/codex codex-rs/codex-api).
var codexRules = []rule{
	// The plan's usage window is spent; it may come as 429 or 403.
	{codes: []string{"usage_limit_reached", "usagelimitexceeded"},
		class: RateLimit, scope: ScopeCredential, why: "ChatGPT plan usage limit"},
	{text: []string{"hit your chatgpt usage limit", "usage limit has been reached"},
		class: RateLimit, scope: ScopeCredential, why: "ChatGPT plan usage limit"},
	{codes: []string{"usage_not_included"}, class: Payment, scope: ScopeCredential, why: "plan does not include Codex"},
	{codes: []string{"server_is_overloaded", "server_overloaded", "serveroverloaded"},
		class: Capacity, why: "servers overloaded"},
	{text: []string{"at capacity", "currently overloaded"}, class: Capacity, why: "model at capacity"},
	// Codex's own names for a failed turn (CodexErrorInfo, as relays pass
	// them on in codex_error_info; the Codex 0.171.0 binary lists them
	// beside server_overloaded and usage_limit_reached). quota_exceeded is
	// what Codex makes of insufficient_quota; the others are the
	// request's own fault, which no retry or rotation cures.
	{codes: []string{"quota_exceeded"}, class: Payment, scope: ScopeCredential, why: "quota or billing exhausted"},
	{codes: []string{"context_window_exceeded"}, class: ClientError, why: "the conversation no longer fits the model's context window"},
	{codes: []string{"content_policy_violation", "bio_policy", "misalignment_policy_violation", "invalid_image_request"},
		class: ClientError, why: "refused by the upstream's policy or input checks"},
}

// googleRules: the Gemini API (generativelanguage.googleapis.com, API
// keys) and Code Assist (cloudcode-pa.googleapis.com, the Google login
// Gemini CLI uses) answer in the same google.rpc.Status shape (google.go).
// Codes are Google's canonical codes (cloud.google.com/apis/design/errors)
// and ErrorInfo reasons; how each is read follows Gemini CLI 0.61
// (packages/core/src/utils/googleQuotaErrors.ts, googleErrors.ts) and the
// samples in testdata/corpus/google.json.
var googleRules = []rule{
	// No capacity for the model, for anyone: Code Assist says it with a
	// 429 or 503 MODEL_CAPACITY_EXHAUSTED, the Gemini API with a 503
	// "The model is overloaded". Gemini CLI waits and retries on the
	// same login; another credential meets the same overload.
	{codes: []string{"MODEL_CAPACITY_EXHAUSTED", "MODEL_CAPACITY_EXCEEDED"},
		class: Capacity, why: "Gemini model out of capacity for everyone"},
	{text: []string{"no capacity available for model"}, class: Capacity, why: "Gemini model out of capacity for everyone"},
	{codes: []string{"UNAVAILABLE"}, text: []string{"overloaded"}, class: Capacity, why: "Gemini model overloaded"},

	// Quota the tier does not include, and billing. A free tier's "limit:
	// 0" for a model never refills (Gemini CLI: terminal); it comes
	// dressed as the daily and per-minute limits it zeroes, so it goes
	// first. The login or key still serves the models it has.
	{status: []int{429}, gq: gqZeroModel, class: Payment, scope: ScopeModel,
		why: "this tier has no Gemini quota for this model (limit 0); enable billing or pick another model"},
	{status: []int{429}, gq: gqZero, class: Payment, scope: ScopeCredential,
		why: "this tier has no Gemini quota here (limit 0); enable billing"},
	{codes: []string{"INSUFFICIENT_G1_CREDITS_BALANCE"}, class: Payment, scope: ScopeCredential,
		why: "Google AI credits spent"},
	{codes: []string{"SUBSCRIPTION_REQUIRED"}, class: Payment, scope: ScopeCredential,
		why: "this account has no Gemini Code Assist license"},
	{text: []string{"lack a gemini code assist license", "named user on your organization"},
		class: Payment, scope: ScopeCredential, why: "this account has no Gemini Code Assist license"},
	// "Gemini API free tier is not available in your country. Please
	// enable billing on your project": a FAILED_PRECONDITION the key's
	// project cures with billing, not the request.
	{codes: []string{"FAILED_PRECONDITION"}, text: []string{"enable billing"}, class: Payment, scope: ScopeCredential,
		why: "Google asks for billing on this project"},

	// Rate limits. Which quota is spent says how long: Code Assist's
	// QUOTA_EXHAUSTED carries its own reset; a daily limit lasts until
	// midnight Pacific, a per-minute one until RetryInfo's delay. The
	// scope is the model when the limit names one (rateScope).
	{codes: []string{"QUOTA_EXHAUSTED"}, class: RateLimit, scope: ScopeCredential, why: "Gemini Code Assist quota spent"},
	{gq: gqDay, class: RateLimit, scope: ScopeCredential, why: "Gemini daily quota spent"},
	{gq: gqMinuteRequest, class: RateLimit, scope: ScopeCredential, why: "Gemini per-minute request limit"},
	{gq: gqMinuteToken, class: RateLimit, scope: ScopeCredential, why: "Gemini per-minute token limit"},
	{gq: gqMinute, class: RateLimit, scope: ScopeCredential, why: "Gemini per-minute limit"},
	{codes: []string{"RATE_LIMIT_EXCEEDED", "RESOURCE_EXHAUSTED"}, class: RateLimit, scope: ScopeCredential,
		why: "Gemini rate limit"},

	// Keys and logins. A dead key wears a 400 INVALID_ARGUMENT.
	{codes: []string{"API_KEY_INVALID"}, class: AuthInvalid, scope: ScopeCredential, why: "Gemini API key refused"},
	{codes: []string{"CONSUMER_SUSPENDED", "API_KEY_SERVICE_BLOCKED"}, class: AuthInvalid, scope: ScopeCredential,
		why: "Google suspended or blocked this key"},
	{codes: []string{"ACCESS_TOKEN_EXPIRED"}, class: AuthExpired, scope: ScopeCredential, why: "access token expired"},
	{codes: []string{"UNAUTHENTICATED"}, class: AuthExpired, scope: ScopeCredential,
		why: "Google refused the access token or key; refresh it"},
	// A project with the API turned off refuses every request until the
	// person enables it (the activation link is in Google's message); no
	// wait or refresh cures it.
	{codes: []string{"SERVICE_DISABLED"}, class: AuthInvalid, scope: ScopeCredential,
		why: "API disabled in the credential's Cloud project; enable it, then log in or add the key again"},
	{codes: []string{"TOS_VIOLATION"}, class: AuthInvalid, scope: ScopeCredential,
		why: "Google suspended this account (terms of service)"},
	{codes: []string{"VALIDATION_REQUIRED"}, class: AuthInvalid, scope: ScopeCredential,
		why: "Google asks you to verify this account (Gemini CLI shows the link)"},
	{codes: []string{"ACCESS_TOKEN_SCOPE_INSUFFICIENT"}, class: AuthInvalid, scope: ScopeCredential,
		why: "the login lacks a permission Google needs; log in again"},
	// A bare "The caller does not have permission" is often one model's
	// refusal: a key or login that serves gemini-2.5 is refused a
	// preview model (gemini-cli#14519). Gemini CLI gives up on a 403;
	// subpool takes that model off the credential and lets another serve.
	{status: []int{403}, codes: []string{"PERMISSION_DENIED"}, class: Payment, scope: ScopeModel,
		why: "Google does not let this credential use this model (permission denied)"},

	// Server failures Gemini CLI retries: 500 INTERNAL, 504
	// DEADLINE_EXCEEDED, 503 UNAVAILABLE, and 499 CANCELLED, which it
	// retries with 429 and 503.
	{codes: []string{"INTERNAL", "DEADLINE_EXCEEDED", "UNAVAILABLE"}, class: Transient, why: "Gemini server error"},
	{status: []int{499}, class: Transient, why: "Gemini cancelled the request; safe to retry"},

	// The request's own fault: sent again, refused again.
	{codes: []string{"INVALID_ARGUMENT"}, class: ClientError, why: "invalid request"},
	{codes: []string{"FAILED_PRECONDITION"}, class: ClientError, why: "Google refused the request (failed precondition)"},
	{codes: []string{"NOT_FOUND"}, class: ClientError, why: "not found"},
}

// unauthorizedRefresh ends the tables of providers that hold OAuth logins
// (anthropic, openai, chatgpt, google): a 401 no rule explained means the access
// token is no longer accepted, and one refresh tells expired from dead,
// where calling it dead would send the user to log in again for nothing.
// The proxy treats it as dead for an API key, which has nothing to
// refresh. Providers with keys only keep statusRules' auth_invalid.
var unauthorizedRefresh = []rule{
	{status: []int{401}, class: AuthExpired, scope: ScopeCredential, why: "access token refused; refresh it"},
}

// zaiRules: z.ai business codes (docs.z.ai/api-reference/api-code and
// docs.bigmodel.cn/cn/api/api-code). The HTTP status alone misleads: z.ai
// answers 429 for rate limits, overloads and an empty balance alike.
var zaiRules = []rule{
	{codes: []string{"1000", "1001", "1002", "1003", "1004"}, class: AuthInvalid, scope: ScopeCredential,
		why: "API key refused; create a new one"},
	{codes: []string{"1110", "1111", "1112", "1121"}, class: AuthInvalid, scope: ScopeCredential,
		why: "account disabled or locked"},
	{codes: []string{"1113"}, class: Payment, scope: ScopeCredential, why: "account balance empty"},
	{codes: []string{"1309"}, class: Payment, scope: ScopeCredential, why: "GLM Coding Plan expired"},
	{codes: []string{"1311"}, class: Payment, scope: ScopeModel, why: "plan does not include this model"},
	{codes: []string{"1305"}, class: Capacity, why: "service overloaded"},
	{codes: []string{"1312"}, class: Capacity, why: "model overloaded"},
	{codes: []string{"1302"}, class: RateLimit, scope: ScopeCredential, why: "concurrency limit"},
	{codes: []string{"1303"}, class: RateLimit, scope: ScopeCredential, why: "request frequency limit"},
	{codes: []string{"1304"}, class: RateLimit, scope: ScopeCredential, why: "daily call limit"},
	{codes: []string{"1308"}, class: RateLimit, scope: ScopeCredential, why: "usage window limit"},
	{codes: []string{"1310"}, class: RateLimit, scope: ScopeCredential, why: "weekly or monthly limit"},
	{codes: []string{"1313"}, class: RateLimit, scope: ScopeCredential, why: "fair-use throttling"},
	{codes: []string{"1120", "1230", "1234"}, class: Transient, why: "server error"},
	{codes: []string{"1200", "1210", "1211", "1212", "1213", "1214", "1215", "1220", "1221", "1222", "1231",
		"1261", "1300", "1301"},
		class: ClientError, why: "invalid request"},
}

// statusRules judge what no table rule matched, by status alone.
type statusRule struct {
	lo, hi int
	class  Class
	scope  Scope
	why    string
}

var statusRules = []statusRule{
	{400, 400, ClientError, ScopeNone, "bad request"},
	{401, 401, AuthInvalid, ScopeCredential, "credential refused"},
	{402, 402, Payment, ScopeCredential, "payment required"},
	{403, 403, ClientError, ScopeNone, "forbidden"},
	{404, 404, ClientError, ScopeNone, "not found"},
	{408, 408, Transient, ScopeNone, "upstream timed out"},
	{409, 409, Transient, ScopeNone, "conflict; safe to retry"},
	{413, 413, ClientError, ScopeNone, "request too large"},
	{425, 425, Transient, ScopeNone, "too early; safe to retry"},
	{429, 429, RateLimit, ScopeCredential, "rate limited"},
	{400, 499, ClientError, ScopeNone, "request refused"},
	{529, 529, Capacity, ScopeNone, "overloaded"},
	{500, 599, Transient, ScopeNone, "server error, no limit signal"},
}

func byStatus(status int) (Class, Scope, string) {
	for _, s := range statusRules {
		if status >= s.lo && status <= s.hi {
			return s.class, s.scope, s.why
		}
	}
	return Transient, ScopeNone, "unexpected status"
}

func concat(parts ...[]rule) []rule {
	var out []rule
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The built-in profiles. Each wire's own table comes first; the other
// wire's follows because relays and "compatible" servers mix shapes (an
// OpenAI-shaped body carrying Anthropic's rate_limit_error). They are
// variables, not built in init, so that anything reading profiles during
// package initialization finds them ready.
var builtins = map[string]*Profile{
	"anthropic": {Name: "anthropic", Wire: "anthropic", LimitScope: LimitCredential,
		rules: concat(regionRules, oauthRules, anthropicRules, unauthorizedRefresh)},
	// ChatGPT logins live in the openai pool and users paste Codex
	// bodies under "openai", so the OpenAI profile knows the ChatGPT
	// backend too.
	"openai": {Name: "openai", Wire: "openai", LimitScope: LimitCredential,
		rules: concat(regionRules, oauthRules, codexRules, openaiRules, unauthorizedRefresh)},
	"chatgpt": {Name: "chatgpt", Wire: "openai", LimitScope: LimitCredential,
		rules: concat(regionRules, oauthRules, codexRules, openaiRules, unauthorizedRefresh)},
	"zai": {Name: "zai", Wire: "anthropic", LimitScope: LimitCredential, zai: true,
		rules: concat(zaiRules, regionRules, oauthRules, anthropicRules, openaiRules)},
	// One table serves Gemini API keys and Google logins (Code Assist):
	// both answer in google.rpc.Status.
	"google": {Name: "google", Wire: "gemini", LimitScope: LimitCredential, google: true,
		rules: concat(regionRules, oauthRules, googleRules, unauthorizedRefresh)},
	"anthropic-compatible": {Name: "anthropic-compatible", Wire: "anthropic", LimitScope: LimitCredential,
		rules: concat(regionRules, oauthRules, anthropicRules, openaiRules)},
	"openai-compatible": {Name: "openai-compatible", Wire: "openai", LimitScope: LimitCredential,
		rules: concat(regionRules, oauthRules, openaiRules, anthropicRules)},
}

// anyProfile serves a nil profile and unknown wires: every table. Google's
// comes before OpenAI's, whose "exceeded your current quota" (billing)
// is also the Gemini API's wording for a per-minute limit; its own rules
// ask for Google's codes and quotas, which no other body carries.
var anyProfile = Profile{Name: "any", LimitScope: LimitCredential, google: true,
	rules: concat(regionRules, oauthRules, codexRules, anthropicRules, googleRules, openaiRules)}
