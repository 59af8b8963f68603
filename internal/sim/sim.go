package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// Options shape every answer of a Server. The zero value is a fast,
// realistic upstream: no latency, five "hello " deltas per stream.
type Options struct {
	// Latency is waited before the response headers of every answer,
	// errors included. It is wall time, not Clock time, and a client that
	// goes away ends the wait.
	Latency time.Duration
	// Chunks is the number of content deltas per streamed answer and the
	// number of ChunkText copies in a JSON answer. Default 5; negative
	// means none (an empty answer).
	Chunks int
	// ChunkInterval is the wall-time gap before every SSE event but the
	// first. Default 0: events go out back to back, each flushed.
	ChunkInterval time.Duration
	// ChunkText is the text of each delta. Default "hello ".
	ChunkText string
	// Clock stamps records, drives quota windows and utilization resets,
	// and supplies every time written on the wire (created_at, reset
	// headers). Default clock.Real{}. Waits (Latency, Delay,
	// ChunkInterval) stay on wall time so a fake clock never freezes a
	// stream that no test is driving.
	Clock clock.Clock
	// BeforeEvent, when set, runs before each SSE event is written, after
	// the previous one was flushed. Tests use it as a gate to prove events
	// leave one by one. A non-nil error cuts the connection there. It must
	// honour ctx: the context ends when the client leaves or Close runs.
	BeforeEvent func(ctx context.Context, ev Event) error
	// Stamp adds "sim_emit_unix_nano" (wall time) to every SSE event's
	// JSON, so a benchmark can measure per-frame delivery delay. Real
	// clients ignore unknown fields, but the bytes differ from upstream's.
	Stamp bool
	// DiscardBodies keeps records lean for long benchmark runs: Record.Body
	// and Record.Header stay nil.
	DiscardBodies bool
	// NoRecords keeps no record at all, for a server that runs for hours
	// (subpool demo): Requests stays empty and WaitRequests waits, while
	// Calls still counts.
	NoRecords bool
	// ChatOnly makes the server an OpenAI-compatible one that serves only
	// Chat Completions (DeepSeek, Ollama, vLLM): POST /v1/responses is a
	// 404, as theirs is.
	ChatOnly bool
}

// Event describes one SSE event about to be written; see Options.BeforeEvent.
type Event struct {
	Credential string
	Path       string
	// Index is the event's 0-based position in its stream.
	Index int
	// Name is the SSE event name ("message_start", "response.completed");
	// on Chat Completions, which has no event names, it is
	// "chat.completion.chunk" or "[DONE]"; on Google's routes, which have
	// none either, "GenerateContentResponse" or "error".
	Name string
}

// Server is a simulated upstream. It implements http.Handler, so it can
// also sit behind httptest.NewServer; Start gives it its own loopback
// listener.
type Server struct {
	opts Options
	clk  clock.Clock

	// base ends when Close runs, so waits and gates inside handlers stop.
	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	srv       *http.Server
	url       string
	creds     map[string]*credState
	google    *googleAuth // google.go: keys and logins Google issued
	records   []Record
	gen       int // bumped by Reset, so late updates to forgotten records are dropped
	cancelled int
	changed   chan struct{} // closed and replaced whenever records change
}

// New returns a Server; it answers through ServeHTTP at once and over the
// network after Start.
func New(opts Options) *Server {
	if opts.Chunks == 0 {
		opts.Chunks = 5
	}
	if opts.Chunks < 0 {
		opts.Chunks = 0
	}
	if opts.ChunkText == "" {
		opts.ChunkText = "hello "
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	base, stop := context.WithCancel(context.Background())
	return &Server{
		opts:    opts,
		clk:     opts.Clock,
		base:    base,
		stop:    stop,
		creds:   map[string]*credState{},
		changed: make(chan struct{}),
	}
}

// Start listens on a fresh loopback port and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sim: Start after Close")
	}
	if s.srv != nil {
		return errors.New("sim: already started")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	s.url = "http://" + ln.Addr().String()
	go s.srv.Serve(ln) //nolint:errcheck // always ErrServerClosed after Close
	return nil
}

// URL is "http://127.0.0.1:PORT" once started, "" before.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the listener, cuts open connections, ends every wait in
// flight and returns once all handlers have returned. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	s.stop()
	if srv != nil {
		srv.Close()
	}
	s.wg.Wait()
}

// routes maps "METHOD path" to a handler; the provider shape of errors is
// decided by the path alone (see providerOf).
var routes = map[string]func(*exchange){
	"POST /v1/messages":                 (*exchange).messages,
	"POST /v1/messages/count_tokens":    (*exchange).countTokens,
	"POST /v1/responses":                (*exchange).responses,
	"POST /backend-api/codex/responses": (*exchange).responses,
	"GET /backend-api/codex/models":     (*exchange).codexModels, // codex.go
	"POST /v1/chat/completions":         (*exchange).chat,
	"GET /v1/models":                    (*exchange).models,
	"POST /v1/embeddings":               (*exchange).embeddings,
	"GET /api/oauth/usage":              (*exchange).claudeUsage, // usage.go
	"GET /backend-api/wham/usage":       (*exchange).codexUsage,
}

// Provider shapes.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

const maxBody = 32 << 20

func providerOf(path string) string {
	switch {
	case path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/") || strings.HasPrefix(path, "/api/oauth/"):
		return Anthropic
	case isGeminiPath(path) || isCodeAssistPath(path):
		return Google
	}
	return OpenAI
}

// route finds x's handler: a fixed path, else a Google one, whose model
// may sit in the path.
func (x *exchange) route() (handler func(*exchange), pathModel string) {
	key := x.r.Method + " " + x.r.URL.Path
	if x.s.opts.ChatOnly && key == "POST /v1/responses" {
		return nil, "" // an OpenAI-compatible server without the Responses API
	}
	if h := routes[key]; h != nil {
		return h, ""
	}
	if h := codeAssistRoutes[key]; h != nil {
		return h, ""
	}
	if h := codeAssistOperation(x.r.Method, x.r.URL.Path); h != nil {
		return h, ""
	}
	return geminiRoute(x.r.Method, x.r.URL.Path)
}

// ServeHTTP answers one request. Drop, CutAfter and a client that leaves
// end the handler with panic(http.ErrAbortHandler), which net/http (and
// httptest.NewServer) turn into a dropped connection; a test calling
// ServeHTTP directly with a ResponseRecorder must not use those.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()

	x := &exchange{
		s:        s,
		w:        w,
		r:        r,
		ctx:      ctx,
		provider: providerOf(r.URL.Path),
		codex:    strings.HasPrefix(r.URL.Path, "/backend-api/codex/"),
		cred:     credentialOf(r),
		reqID:    "req_" + newID(24),
	}
	// finish runs on every way out, the aborts of CutAfter and Drop
	// included (they unwind by panic), so no record is left half-written.
	defer x.finish()
	defer func() {
		// An error event ended the stream early, cleanly (ErrorAfter).
		if r := recover(); r != nil && r != errStreamEnded {
			panic(r)
		}
	}()
	x.serve()
}

// errStreamEnded unwinds a handler whose stream ended early but cleanly:
// unlike an abort, the response completes.
var errStreamEnded = &struct{ string }{"stream ended"}

// credentialOf returns the secret a request carried: x-api-key first (what
// API-key clients send to Anthropic), else a bearer token (OAuth and
// OpenAI). The Gemini API takes only a key, x-goog-api-key (what Gemini CLI
// sends) or ?key=; Code Assist only a bearer token.
func credentialOf(r *http.Request) string {
	switch {
	case isGeminiPath(r.URL.Path):
		if k := r.Header.Get("x-goog-api-key"); k != "" {
			return k
		}
		return r.URL.Query().Get("key")
	case isCodeAssistPath(r.URL.Path):
		return bearer(r)
	}
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	return bearer(r)
}

func bearer(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

// request is the part of any of the three request bodies the sim reads.
type request struct {
	Model         string            `json:"model"`
	Stream        bool              `json:"stream"`
	Tools         []json.RawMessage `json:"tools"`
	Messages      json.RawMessage   `json:"messages"`
	Input         json.RawMessage   `json:"input"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Dimensions int `json:"dimensions"`
}

// exchange is one request being answered.
type exchange struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	ctx      context.Context
	provider string
	codex    bool
	cred     string
	reqID    string

	body []byte
	req  request
	step Step
	rate rateSnapshot

	tool      *toolCall
	toolKnown bool

	// Google (google.go): the login a Code Assist token belongs to, and
	// the request bodies parsed on demand.
	login *googleLogin
	env   *codeAssistEnvelope
	gbody *geminiBody

	gen, idx   int // where this request's record sits
	recorded   bool
	done       bool // the sim finished its answer
	clientGone bool // the client left, or Close cut the exchange
}

func (x *exchange) serve() {
	handler, pathModel := x.route()
	body, err := io.ReadAll(io.LimitReader(x.r.Body, maxBody+1))
	x.body = body
	badBody := err != nil || len(body) > maxBody
	if !badBody && x.r.Method == http.MethodPost && handler != nil {
		badBody = json.Unmarshal(body, &x.req) != nil
	}
	if x.provider == Google && handler != nil && !badBody {
		x.googleRequest(pathModel)
	}

	switch {
	case handler == nil:
		x.failWith(http.StatusNotFound, x.notFoundBody())
		return
	case x.cred == "":
		status := http.StatusUnauthorized
		if x.provider == Google && !x.codeAssist() {
			status = http.StatusForbidden // the Gemini API: "unregistered callers"
		}
		x.failWith(status, x.missingKeyBody())
		return
	case badBody:
		x.failWith(http.StatusBadRequest, x.badBodyBody(err))
		return
	}
	if x.provider == Google {
		// Google checks who is asking before anything else: a key or
		// token it never issued, an expired token, a foreign project.
		if status, body := x.googleAdmit(); status != 0 {
			x.failWith(status, body)
			return
		}
	}

	step, scripted := x.takeStep() // usage.go: usage polls have a script of their own
	step = x.googleStepFor(step)   // google_errors.go: a canned Google step takes the route's shape
	x.step = step
	switch {
	case step.Drop:
		x.record(0)
		x.wait(step.Delay)
		panic(http.ErrAbortHandler)
	case scripted && step.Body != "":
		status := step.Status
		if status == 0 {
			status = http.StatusOK
		}
		x.failWith(status, x.render(step.Body))
		return
	case scripted && step.Status != 0 && step.Status != http.StatusOK:
		x.failWith(step.Status, x.defaultErrorBody(step.Status))
		return
	}

	if refusal := x.admit(); refusal != nil {
		x.refuse(refusal)
		return
	}
	if msg := x.codexRefusal(); msg != "" { // codex.go: after the token and the plan's limits
		x.failWith(http.StatusBadRequest, codexDetail(msg))
		return
	}
	x.record(http.StatusOK)
	x.wait(step.Delay)
	if !x.usageRoute() { // usage.go: a poll is no answer, and spends nothing
		x.successHeaders()
	}
	if step.StreamError != "" && step.ErrorAfter == 0 {
		x.streamError()
		return
	}
	handler(x)
}

// wait holds the answer for Options.Latency plus extra, on wall time.
// When the client leaves (or Close runs) first, it drops the connection.
func (x *exchange) wait(extra time.Duration) {
	if !sleep(x.ctx, x.s.opts.Latency+extra) {
		x.gone()
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// failWith answers an error status with body in the provider's shape,
// after the usual latency and any scripted delay.
func (x *exchange) failWith(status int, body []byte) {
	x.record(status)
	x.wait(x.step.Delay)
	h := x.w.Header()
	x.idHeader()
	x.s.utilizationHeaders(h, x.cred, x.provider, x.codex)
	h.Set("Content-Type", x.jsonType())
	x.applyStepHeaders()
	if x.step.CutAfter != 0 {
		x.writeCut(status, body)
		return
	}
	x.w.WriteHeader(status)
	x.write(body)
	x.done = true
}

// writeCut sends headers and half the body, then drops the connection: a
// response that broke after the client started reading it.
func (x *exchange) writeCut(status int, body []byte) {
	x.w.Header().Set("Content-Length", itoa(len(body)))
	x.w.WriteHeader(status)
	x.write(body[:len(body)/2])
	x.abort()
}

func (x *exchange) idHeader() {
	switch x.provider {
	case Google:
		x.googleHeaders() // Google sends no request id
	case Anthropic:
		x.w.Header().Set("request-id", x.reqID)
	default:
		x.w.Header().Set("x-request-id", x.reqID)
	}
}

func (x *exchange) applyStepHeaders() {
	h := x.w.Header()
	for k, v := range x.step.Header {
		h.Set(k, x.renderString(v))
	}
}

// writeJSON answers 200 with a JSON value, honouring CutAfter.
func (x *exchange) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the sim's own values get here
	}
	x.w.Header().Set("Content-Type", x.jsonType())
	x.applyStepHeaders()
	if x.step.CutAfter != 0 {
		x.writeCut(http.StatusOK, b)
		return
	}
	x.w.WriteHeader(http.StatusOK)
	x.write(b)
	x.done = true
}

func (x *exchange) jsonType() string {
	if x.provider == Google {
		return "application/json; charset=UTF-8"
	}
	return "application/json"
}

func (x *exchange) write(b []byte) {
	if _, err := x.w.Write(b); err != nil {
		x.gone()
	}
}

// abort flushes what was written and drops the connection without ending
// the body, which the client sees as an unexpected EOF. net/http recovers
// this panic quietly; a caller driving ServeHTTP without a server sees it.
func (x *exchange) abort() {
	_ = http.NewResponseController(x.w).Flush()
	panic(http.ErrAbortHandler)
}

// gone ends an exchange whose client left or whose server is closing. It
// drops the connection rather than returning, because a handler that
// returns gets its response completed by net/http: an empty 200 before
// the headers, a cleanly ended stream after them, either of which a
// client still connected (Close racing a request) would take for an
// answer.
func (x *exchange) gone() {
	x.clientGone = true
	panic(http.ErrAbortHandler)
}
