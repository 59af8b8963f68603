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

// geminiWaitMax bounds what a Gemini API request waits inside subpool
// before its answer's headers: Gemini CLI gives up on headers after 60 s
// in that mode (undici's headersTimeout, Gemini CLI 0.61.0) and sends the
// request again, so a longer wait would only double it. Past it the
// client is told how long with a RetryInfo, which it waits out. Its login
// mode has no such limit.
const geminiWaitMax = 50 * time.Second

func geminiWaits(pol policy.Config, c translate.GeminiCall) policy.Config {
	if !c.CodeAssist {
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
	needLogin := c.CodeAssist && !c.ModelMethod()
	if !needLogin && !c.List {
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

// geminiRequest shapes rn's request for au. model is the run's model (an
// alias or a fallback may have changed it); body is in the client's form.
func geminiRequest(c translate.GeminiCall, model string, query url.Values, body []byte, au auth.Auth) (geminiShape, error) {
	s := geminiShape{query: geminiQuery(query, c.Method)}
	switch {
	case c.CodeAssist && au.CodeAssist:
		s.path = translate.CodeAssistPrefix + ":" + c.Method
		if c.Op != "" {
			s.path = translate.CodeAssistPrefix + "/" + c.Op
		}
		s.body = body
		switch {
		case c.ModelMethod() && body != nil:
			s.body = setEnvelope(body, model, au.Project, c.Method)
		case body != nil && c.Method != "loadCodeAssist" && c.Method != "onboardUser":
			// retrieveUserQuota, listExperiments…: about the project of
			// the login that answers. (The two setup calls name the
			// person's own project, if any, and are left as they are.)
			s.body = setProject(body, au.Project)
		}
	case c.CodeAssist:
		if !c.ModelMethod() {
			return s, errGeminiForm
		}
		s.path = translate.GeminiBeta + "models/" + url.PathEscape(model) + ":" + c.Method
		s.body = unwrapRequest(body)
		s.wrap = c.Method != translate.GeminiCount
	case au.CodeAssist:
		if c.List {
			return s, errors.New("a Google login cannot list the Gemini API's models")
		}
		s.path = translate.CodeAssistPrefix + ":" + c.Method
		s.body = wrapRequest(body, model, au.Project, c.Method)
		s.unwrap = c.Method != translate.GeminiCount
	default:
		s.path = "/" + cmp.Or(c.Version, "v1beta") + "/models"
		if !c.List {
			s.path += "/" + url.PathEscape(model) + ":" + c.Method
		}
		s.body = body
	}
	return s, nil
}

// geminiQuery keeps the client's query but for a key it may carry
// (?key=…: subpool's client key, never the upstream's), and asks for SSE
// on a stream, the framing subpool relays.
func geminiQuery(q url.Values, method string) string {
	if len(q) == 0 && method != translate.GeminiStream {
		return ""
	}
	out := url.Values{}
	for k, vs := range q {
		if k != "key" {
			out[k] = vs
		}
	}
	if method == translate.GeminiStream {
		out.Set("alt", "sse")
	}
	return out.Encode()
}

// wrapRequest puts a Gemini API request in Code Assist's envelope. Code
// Assist's countTokens takes the model inside the request, as
// "models/{model}", and no project.
func wrapRequest(body []byte, model, project, method string) []byte {
	if method == translate.GeminiCount {
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
	if method == translate.GeminiCount {
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
func geminiInfo(info *requestInfo, c translate.GeminiCall, body []byte) {
	info.Stream = c.Method == translate.GeminiStream
	if !c.CodeAssist {
		info.Model = c.Model
		return
	}
	if !c.ModelMethod() {
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
