package proxy

// The Gemini wire has two forms, and one pool serves both. Gemini API keys
// answer the Gemini API (/v1beta/models/{model}:{method}, the model in the
// path); Google logins answer Code Assist (/v1internal:{method}, the model
// in the body and the request wrapped in an envelope naming the login's
// Cloud project). Gemini CLI speaks the first with a key and the second
// with "Login with Google"; whichever it speaks, the attempt is sent in the
// form its credential takes, and the answer comes back in the client's.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/translate"
)

// The model methods both forms serve. Code Assist's other methods
// (loadCodeAssist, onboardUser, listExperiments, retrieveUserQuota, …)
// only a login can answer.
const (
	gmGenerate = "generateContent"
	gmStream   = "streamGenerateContent"
	gmCount    = "countTokens"
)

// geminiCall is what a client path on the Gemini wire asks for.
type geminiCall struct {
	codeAssist bool   // /v1internal…: the client speaks Code Assist
	method     string // generateContent, streamGenerateContent, countTokens, loadCodeAssist, …
	model      string // the Gemini API's path model; "" for Code Assist (it is in the body)
	op         string // GET /v1internal/{op}: a long-running operation
	list       bool   // GET /v1beta/models
	version    string // the Gemini API's version the client asked ("v1beta"); "" for Code Assist
}

// geminiBeta and codeAssistPrefix start the two forms' paths.
const (
	geminiBeta       = "/v1beta/"
	codeAssistPrefix = "/v1internal"
)

// geminiVersions are the Gemini API's versions a client may ask for.
// Gemini CLI takes any through GOOGLE_GENAI_API_VERSION and puts it in the
// path as it is (@google/genai's apiVersion, v1beta when unset, Gemini CLI
// 0.61.0); Google serves v1beta, v1 and v1alpha. An API key's attempt asks
// the upstream in the client's version, a login's goes to Code Assist,
// which has one. "/v1/models" alone stays the OpenAI model list: the
// Gemini API's list is served on the other two.
var geminiVersions = [...]string{"v1beta", "v1", "v1alpha"}

// geminiVersion is the Gemini API version upath starts with, and the rest
// of it from "/models"; ok false for none.
func geminiVersion(upath string) (version, rest string, ok bool) {
	for _, v := range geminiVersions {
		if rest, ok := strings.CutPrefix(upath, "/"+v+"/models"); ok {
			return v, rest, true
		}
	}
	return "", "", false
}

// parseGemini reads a Gemini-wire path; ok false for anything else.
func parseGemini(upath string) (c geminiCall, ok bool) {
	if rest, ok := strings.CutPrefix(upath, codeAssistPrefix); ok {
		c.codeAssist = true
		switch {
		case strings.HasPrefix(rest, ":") && validMethod(rest[1:]):
			c.method = rest[1:]
			return c, true
		case strings.HasPrefix(rest, "/") && len(rest) > 1 && !strings.Contains(rest, ":") && !strings.Contains(rest, ".."):
			c.op = rest[1:]
			return c, true
		}
		return c, false
	}
	version, rest, ok := geminiVersion(upath)
	if !ok {
		return c, false
	}
	c.version = version
	if rest == "" {
		c.list = version != "v1"
		return c, c.list
	}
	// The model is checked when the request is served (geminiModelRefused),
	// so that one with a '/' or a '?' in it is told why, not 404.
	rest, ok = strings.CutPrefix(rest, "/")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 || !isModelMethod(rest[i+1:]) {
		return c, false
	}
	c.model, c.method = rest[:i], rest[i+1:]
	return c, true
}

// geminiModelRefused says why a model name taken from the client cannot
// go into an upstream path; "" when it can. Gemini's model names are
// letters, digits, '-', '.' and '_' ("gemini-2.5-flash-preview-05-20"); a
// '?', '#', '/' or '%' (which arrive decoded from %3F, %23, %2F, %25)
// would move the rest of the path into a query or fragment, or into
// another resource, asked with the pool's key.
func geminiModelRefused(model string) string {
	ok := model != "" && model != "." && model != ".." && len(model) <= 128
	for _, r := range model {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			ok = false
			break
		}
	}
	if ok || model == "" {
		return ""
	}
	return "the model name " + quoteShort(model) + " is not one Gemini has: a model name holds letters, digits, '-', '.' and '_' only"
}

func isModelMethod(m string) bool { return m == gmGenerate || m == gmStream || m == gmCount }

// validMethod: a Code Assist method name is a plain identifier.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// modelMethod reports whether the call is one both forms answer.
func (c geminiCall) modelMethod() bool { return isModelMethod(c.method) }

// method is the allowed HTTP method of a Gemini-wire path.
func (c geminiCall) httpMethod() string {
	if c.list || c.op != "" {
		return http.MethodGet
	}
	return http.MethodPost
}

// geminiWaitMax bounds what a Gemini API request waits inside subpool
// before its answer's headers: Gemini CLI gives up on headers after 60 s
// in that mode (undici's headersTimeout, Gemini CLI 0.61.0) and sends the
// request again, so a longer wait would only double it. Past it the
// client is told how long with a RetryInfo, which it waits out. Its login
// mode has no such limit.
const geminiWaitMax = 50 * time.Second

func geminiWaits(pol policy.Config, c geminiCall) policy.Config {
	if !c.codeAssist {
		pol.SoleProviderMax = min(pol.SoleProviderMax, geminiWaitMax)
		pol.CapacityMax = min(pol.CapacityMax, geminiWaitMax)
	}
	return pol
}

// geminiUnservable says why no credential of rt's provider can ever take
// the call: Code Assist's own calls (or the Gemini API's model list) with
// a pool that holds no credential of the kind that answers them. Said at
// once, rather than as a pool that has nothing ready.
func (p *Proxy) geminiUnservable(rt route) string {
	c := rt.gemini
	needLogin := c.codeAssist && !c.modelMethod()
	if !needLogin && !c.list {
		return ""
	}
	for _, cr := range p.o.Pool.Credentials(rt.prov.Name) {
		if (cr.Kind == api.KindOAuth) == needLogin {
			return ""
		}
	}
	if needLogin {
		return errGeminiForm.Error()
	}
	return "only a Gemini API key can list the Gemini API's models; add one with `subpool add-key google --label NAME`"
}

// geminiShape is one attempt's request in the form its credential takes,
// and what must be done to the answer for the client.
type geminiShape struct {
	path, query string
	body        []byte
	// unwrap: the upstream answers in Code Assist's envelope and the
	// client reads the bare Gemini answer; wrap: the other way round.
	unwrap, wrap bool
}

// errGeminiForm: a Code Assist method other than the model methods, sent
// with an API key, which only the Gemini API answers.
var errGeminiForm = errors.New("only a Google login can answer this Code Assist call; add one with `subpool login google`")

// cannotTake says why a credential cannot take rn's request in any form:
// a Code Assist call that only a login answers, or the Gemini API's model
// list, which a login has not.
func (rn *run) cannotTake(au auth.Auth) error {
	if rn.wire != WireGemini {
		return nil
	}
	_, err := geminiRequest(rn.gemini, rn.model, nil, nil, au)
	return err
}

// geminiRequest shapes rn's request for au. model is the run's model (an
// alias or a fallback may have changed it); body is in the client's form.
func geminiRequest(c geminiCall, model string, query url.Values, body []byte, au auth.Auth) (geminiShape, error) {
	s := geminiShape{query: geminiQuery(query, c.method)}
	switch {
	case c.codeAssist && au.CodeAssist:
		s.path = codeAssistPrefix + ":" + c.method
		if c.op != "" {
			s.path = codeAssistPrefix + "/" + c.op
		}
		s.body = body
		switch {
		case c.modelMethod() && body != nil:
			s.body = setEnvelope(body, model, au.Project, c.method)
		case body != nil && c.method != "loadCodeAssist" && c.method != "onboardUser":
			// retrieveUserQuota, listExperiments…: about the project of
			// the login that answers. (The two setup calls name the
			// person's own project, if any, and are left as they are.)
			s.body = setProject(body, au.Project)
		}
	case c.codeAssist:
		if !c.modelMethod() {
			return s, errGeminiForm
		}
		s.path = geminiBeta + "models/" + url.PathEscape(model) + ":" + c.method
		s.body = unwrapRequest(body)
		s.wrap = c.method != gmCount
	case au.CodeAssist:
		if c.list {
			return s, errors.New("a Google login cannot list the Gemini API's models")
		}
		s.path = codeAssistPrefix + ":" + c.method
		s.body = wrapRequest(body, model, au.Project, c.method)
		s.unwrap = c.method != gmCount
	default:
		s.path = "/" + cmp.Or(c.version, "v1beta") + "/models"
		if !c.list {
			s.path += "/" + url.PathEscape(model) + ":" + c.method
		}
		s.body = body
	}
	return s, nil
}

// geminiQuery keeps the client's query but for a key it may carry
// (?key=…: subpool's client key, never the upstream's), and asks for SSE
// on a stream, the framing subpool relays.
func geminiQuery(q url.Values, method string) string {
	if len(q) == 0 && method != gmStream {
		return ""
	}
	out := url.Values{}
	for k, vs := range q {
		if k != "key" {
			out[k] = vs
		}
	}
	if method == gmStream {
		out.Set("alt", "sse")
	}
	return out.Encode()
}

// wrapRequest puts a Gemini API request in Code Assist's envelope. Code
// Assist's countTokens takes the model inside the request, as
// "models/{model}", and no project.
func wrapRequest(body []byte, model, project, method string) []byte {
	if method == gmCount {
		var inner map[string]json.RawMessage
		if json.Unmarshal(body, &inner) != nil {
			return body
		}
		inner["model"], _ = json.Marshal("models/" + model)
		b, _ := json.Marshal(map[string]any{"request": inner})
		return b
	}
	b, err := translate.WrapCodeAssist(body, translate.CodeAssist{Model: model, Project: project})
	if err != nil { // not a request: the upstream judges it
		return body
	}
	return b
}

// setEnvelope names the login's project (each login has its own, and the
// client only knows the one it was told) and the run's model in a Code
// Assist body.
func setEnvelope(body []byte, model, project, method string) []byte {
	if method == gmCount {
		var env map[string]json.RawMessage
		var inner map[string]json.RawMessage
		if json.Unmarshal(body, &env) != nil || json.Unmarshal(env["request"], &inner) != nil {
			return body
		}
		inner["model"], _ = json.Marshal("models/" + model)
		env["request"], _ = json.Marshal(inner)
		b, _ := json.Marshal(env)
		return b
	}
	b, err := translate.SetCodeAssist(body, translate.CodeAssist{Model: model, Project: project})
	if err != nil {
		return body
	}
	return b
}

// setProject names project in a Code Assist call's top-level "project"
// and its metadata's "duetProject", where the body has them.
func setProject(body []byte, project string) []byte {
	var m map[string]json.RawMessage
	if project == "" || json.Unmarshal(body, &m) != nil {
		return body
	}
	p, _ := json.Marshal(project)
	changed := false
	if _, ok := m["project"]; ok {
		m["project"], changed = p, true
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["metadata"], &meta) == nil {
		if _, ok := meta["duetProject"]; ok {
			meta["duetProject"] = p
			m["metadata"], _ = json.Marshal(meta)
			changed = true
		}
	}
	if !changed {
		return body
	}
	b, _ := json.Marshal(m)
	return b
}

// unwrapRequest takes the Gemini API request out of a Code Assist
// envelope, without the fields only Code Assist knows (the API refuses
// unknown fields).
func unwrapRequest(body []byte) []byte {
	b, _, err := translate.UnwrapCodeAssist(body)
	if err != nil {
		return body
	}
	return b
}

// geminiInfo fills in what the Gemini wire keeps in the path: the model
// (the Gemini API's) and whether the answer streams; and Code Assist's
// session, which keeps a conversation on one login.
func geminiInfo(info *requestInfo, c geminiCall, body []byte) {
	info.Stream = c.method == gmStream
	if !c.codeAssist {
		info.Model = c.model
		return
	}
	if !c.modelMethod() {
		info.Model = ""
		return
	}
	info.Model = modelOfCodeAssist(body)
	var env struct {
		Request struct {
			SessionID string `json:"session_id"`
		} `json:"request"`
	}
	if json.Unmarshal(body, &env) == nil && env.Request.SessionID != "" && info.Affinity == "" {
		info.Affinity = "gca:" + env.Request.SessionID
	}
}

// modelOfCodeAssist is the model a Code Assist body names: the envelope's,
// or countTokens' "models/{model}" inside its request.
func modelOfCodeAssist(body []byte) string {
	var env struct {
		Model   string `json:"model"`
		Request struct {
			Model string `json:"model"`
		} `json:"request"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	if env.Model != "" {
		return env.Model
	}
	return strings.TrimPrefix(env.Request.Model, "models/")
}

// reshapeAnswer turns a successful answer's body into the client's form.
func reshapeAnswer(resp *http.Response, s geminiShape) {
	if !(s.wrap || s.unwrap) || resp.StatusCode != http.StatusOK {
		return
	}
	convert := wrapAnswer
	if s.unwrap {
		convert = unwrapAnswer
	}
	if isEventStream(resp.Header) {
		resp.Body = &eventReshaper{src: resp.Body, r: bufio.NewReaderSize(resp.Body, 4<<10), convert: convert}
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReshape+1))
	resp.Body.Close()
	if err == nil && len(b) <= maxReshape {
		b = convert(b)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
}

// maxReshape bounds a JSON answer converted whole; a larger one goes on as
// it came.
const maxReshape = 64 << 20

func wrapAnswer(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 || isErrorJSON(b) {
		return b
	}
	if out, err := translate.WrapCodeAssistResponse(b); err == nil {
		return out
	}
	return b
}

func unwrapAnswer(b []byte) []byte {
	if out, err := translate.UnwrapCodeAssistResponse(b); err == nil {
		return out
	}
	return b
}

// isErrorJSON: an error travels as it is in both forms.
func isErrorJSON(b []byte) bool {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && len(e.Error) > 0
}

// eventReshaper converts each SSE data line of a stream as it passes,
// keeping the stream's pace: a line is converted as soon as it is whole.
type eventReshaper struct {
	src     io.Closer
	r       *bufio.Reader
	convert func([]byte) []byte
	pending []byte
	err     error
}

func (e *eventReshaper) Read(p []byte) (int, error) {
	for len(e.pending) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		line, err := e.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = e.r.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		e.err = err
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			nl := len(data) - len(bytes.TrimRight(data, "\r\n"))
			payload := bytes.TrimSpace(data)
			conv := e.convert(payload)
			out := make([]byte, 0, len(conv)+8)
			out = append(out, "data: "...)
			out = append(out, conv...)
			out = append(out, data[len(data)-nl:]...)
			e.pending = out
		} else {
			e.pending = append(e.pending[:0], line...)
		}
	}
	n := copy(p, e.pending)
	e.pending = e.pending[n:]
	return n, nil
}

func (e *eventReshaper) Close() error { return e.src.Close() }
