package app

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/classify"
)

const classifyUsage = `Usage: subpool classify --provider P --status N [--header 'K: V']... [--body FILE|-]

Says what subpool would make of an upstream's answer, without sending
anything anywhere: prints one JSON line
  {"class":…,"scope":…,"retry_after_ms":…,"reason":…}
retry_after_ms is 0 when the answer gives no usable time.

  --provider P      anthropic, openai, chatgpt, zai, google, anthropic-compatible
                    or openai-compatible (openai also knows ChatGPT/Codex
                    bodies; google both Gemini API keys and Google logins)
  --status N        the HTTP status, e.g. 429
  --header 'K: V'   a response header; repeat for more
  --body FILE       the response body from a file, or - for stdin
  --event NAME      classify the first event of a 200 stream instead: the body
                    is the event's data, NAME its name ("" for a bare data line)
  --limit-scope S   credential (default) or egress: how far the provider's
                    rate limits reach
  --now TIME        the clock, RFC 3339 or unix seconds (default: now), for
                    answers that carry reset timestamps

docs/providers.md explains every rule.

Example:
  subpool classify --provider anthropic --status 429 --header 'retry-after: 30'
`

// maxClassifyBody bounds what is read from --body; the classifier reads
// only the head of a body anyway.
const maxClassifyBody = 1 << 20

// classifyHeaderList collects repeated --header flags.
type classifyHeaderList []string

func (h *classifyHeaderList) String() string     { return strings.Join(*h, ", ") }
func (h *classifyHeaderList) Set(v string) error { *h = append(*h, v); return nil }

// cmdClassify runs `subpool classify`; args follow "classify".
func cmdClassify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("subpool classify", flag.ContinueOnError)
	fl.SetOutput(io.Discard) // errors are reported below, in one line
	provider := fl.String("provider", "", "")
	status := fl.String("status", "", "")
	bodyArg := fl.String("body", "", "")
	limitScope := fl.String("limit-scope", "", "")
	nowArg := fl.String("now", "", "")
	var headers classifyHeaderList
	fl.Var(&headers, "header", "")
	var event *string
	fl.Func("event", "", func(v string) error { event = &v; return nil })

	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "subpool classify: "+format+" (see `subpool classify --help`)\n", a...)
		return 2
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, classifyUsage)
			return 0
		}
		return bad("%s", classifyFirstLine(err.Error()))
	}
	if fl.NArg() > 0 {
		return bad("unexpected argument %q", fl.Arg(0))
	}

	p, why := classifyProfile(*provider, *limitScope)
	if p == nil {
		return bad("%s", why)
	}

	code := 0
	if event == nil {
		if *status == "" {
			return bad("--status is required, e.g. --status 429")
		}
		n, err := strconv.Atoi(strings.TrimSpace(*status))
		if err != nil || n < 100 || n > 999 {
			return bad("--status must be an HTTP status such as 429, not %q", *status)
		}
		code = n
	}

	h, badLine := headers.header()
	if badLine != "" {
		return bad("--header must look like 'Name: value', not %q", badLine)
	}

	now := time.Now()
	if *nowArg != "" {
		t, err := parseClassifyNow(*nowArg)
		if err != nil {
			return bad("--now must be RFC 3339 (2026-09-10T12:00:00Z) or unix seconds, not %q", *nowArg)
		}
		now = t
	}

	body, err := readClassifyBody(*bodyArg, stdin)
	if err != nil {
		return bad("cannot read --body %s: %s", *bodyArg, classifyFirstLine(err.Error()))
	}

	var v classify.Verdict
	if event != nil {
		v, _ = classify.ClassifyEvent(p, *event, body, now)
	} else {
		v = classify.Classify(p, classify.Response{Status: code, Header: h, Body: body}, now)
	}
	out, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(stderr, "subpool classify: %s\n", classifyFirstLine(err.Error()))
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

func parseClassifyNow(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, errors.New("bad time")
	}
	return time.Unix(sec, 0), nil
}

// classifyPathErr drops the path (already in the message) from an open error.
func classifyPathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func classifyFirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// header reads the --header lines into a header; badLine is the first
// line that is no "Name: value".
func (l classifyHeaderList) header() (h http.Header, badLine string) {
	h = http.Header{}
	for _, line := range l {
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, line
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, ""
}

// readClassifyBody reads --body: a file, "-" for stdin, "" for none;
// bounded by maxClassifyBody.
func readClassifyBody(arg string, stdin io.Reader) ([]byte, error) {
	if arg == "" {
		return nil, nil
	}
	var r io.Reader = stdin
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return nil, errors.New(classifyPathErr(err))
		}
		defer f.Close()
		r = f
	}
	return io.ReadAll(io.LimitReader(r, maxClassifyBody))
}

// classifyProfile is the provider's rules for --provider and
// --limit-scope; nil and why when they name none.
func classifyProfile(provider, limitScope string) (p *classify.Profile, why string) {
	if provider == "" {
		return nil, "--provider is required: one of " + strings.Join(classify.Names(), ", ")
	}
	if a, ok := providerAliases[strings.ToLower(provider)]; ok && classify.Lookup(provider) == nil {
		provider = a // claude, gemini: the one table of names every verb reads
	}
	p = classify.Lookup(provider)
	if p == nil {
		return nil, fmt.Sprintf("unknown --provider %q:%s use one of %s", provider, suggestName(strings.ToLower(provider), classify.Names(), providerAliases), strings.Join(classify.Names(), ", "))
	}
	switch strings.ToLower(limitScope) {
	case "", classify.LimitCredential:
	case classify.LimitEgress:
		p = classify.Custom(p.Name, p.Wire, classify.LimitEgress)
	default:
		return nil, fmt.Sprintf("--limit-scope must be credential or egress, not %q", limitScope)
	}
	return p, ""
}
