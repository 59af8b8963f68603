package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// An upstream's answer headers are relayed to the client, so their size is
// bounded twice: the transport reads no more than maxResponseHeader
// (Transport.MaxResponseHeaderBytes, on HTTP/2 too: an upstream sending
// 100,000 headers, 3.6 MB, was read and relayed whole), and no more than
// maxRelayedHeader of them goes on. The clients' own parsers stop far lower (Node's at 16
// KiB, so Claude Code and Gemini CLI; hyper, under Codex, at 100
// headers), and a real upstream sends a few KiB. Past either, the attempt
// ends in a 502 saying why, in the provider's shape, which the policy
// treats as any upstream 502.
const (
	maxResponseHeader = 1 << 20
	maxRelayedHeader  = 64 << 10
)

// boundHeaders is RoundTrip's answer for req, or the 502 that stands for
// it when its headers passed a bound.
func boundHeaders(req *http.Request, resp *http.Response, err error, wire Wire) (*http.Response, error) {
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "response headers exceeded") || strings.Contains(msg, "response header list larger") {
			return headerRefusal(req, wire, fmt.Sprintf("the upstream sent more than %d MiB of response headers, past subpool's bound", maxResponseHeader>>20)), nil
		}
		return resp, err
	}
	if n := headerSize(resp.Header); n > maxRelayedHeader {
		resp.Body.Close()
		return headerRefusal(req, wire, fmt.Sprintf("the upstream sent %d KiB of response headers (%d), past subpool's bound of %d KiB", n>>10, len(resp.Header), maxRelayedHeader>>10)), nil
	}
	return resp, nil
}

// headerSize is the size of h as sent on the wire, near enough.
func headerSize(h http.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // ": " and CRLF
		}
	}
	return n
}

// headerRefusal is the 502 an attempt ends in, in the wire's shape, msg
// saying why.
func headerRefusal(req *http.Request, wire Wire, msg string) *http.Response {
	body := errorBody(wire, http.StatusBadGateway, msg+"; the upstream, or something between subpool and it, is misbehaving")
	return &http.Response{
		Status: "502 Bad Gateway", StatusCode: http.StatusBadGateway, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
