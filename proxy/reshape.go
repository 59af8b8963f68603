package proxy

import (
	"net/http"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/translate"
)

// Reshaping: a request served on its own provider by a credential that
// needs another wire than the client speaks. A ChatGPT login takes only
// the Codex backend's Responses requests, so a Chat Completions client
// (any editor) is translated to it, and another Responses client's
// request (the SDK's stream:false, its output cap) is put in the
// backend's shape. A custom provider with wire = "openai-chat" serves only
// Chat Completions, so a Responses client (Codex CLI) is translated to it.
// Each attempt picks its wire by its credential's auth (outbound), as a
// fallback does, since a pool may mix API keys, which take the request as
// it came, and ChatGPT logins.

// reshapes reports whether a credential of rn's provider may need rn's
// request in another wire.
func (rn *run) reshapes() bool {
	w := clientWire(rn.route)
	if rn.wire != WireOpenAI || (w != translate.OpenAIChat && w != translate.OpenAIResponses) {
		return false
	}
	if rn.prov.ChatOnly {
		return w == translate.OpenAIResponses
	}
	for _, c := range rn.p.o.Pool.Credentials(rn.prov.Name) {
		if c.Kind == api.KindOAuth {
			return true
		}
	}
	return false
}

// loopReshaped runs rn's attempt loop with each attempt's request in the
// wire its credential needs and every answer in the client's. As for rn.loop, a refusal with nothing written is
// for the caller to answer.
func (rn *run) loopReshaped(mayWait bool) (outcome, *policy.Action) {
	d := &detour{
		to: rn.prov, model: rn.model, client: clientWire(rn.route), clientModel: rn.model, stream: rn.info.Stream,
		clientPath: rn.upath, src: rn.jsonBody(rn.body), bodies: map[translate.Target]translated{}, logf: rn.p.noteOnce, own: true,
	}
	d.upath = d.pathFor(d.apiWire(), rn.upath)
	if _, err := d.prepare(rn.p.o.Pool.Status(rn.prov.Name)); err != nil {
		// No credential's wire can carry it: the request is fine for the
		// API, not for these credentials.
		return outcome{}, &policy.Action{Kind: policy.Fail, Status: http.StatusBadRequest, Final: true,
			Message: rn.prov.Name + " " + err.Error()}
	}
	fw := newRewriter(rn.w, &translator{d: d, clientWire: rn.wire})
	d.in = rn.r
	// A run of its own through the translating writer, which takes
	// over what rn has learned and gives it back.
	tr := rn.request.newRun(fw, rn.r, rn.route, rn.body, rn.model, rn.auth)
	tr.via, tr.tried = d, rn.tried
	res, ex := tr.loop(mayWait)
	rn.tried = tr.tried
	if ex != nil && !fw.committed {
		return res, ex
	}
	if ex != nil {
		res = outcome{status: ex.Status, class: classRefused}
	}
	fw.finish(res.abort)
	return res, nil
}
