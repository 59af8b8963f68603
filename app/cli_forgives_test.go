package app

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// isOneLine reports whether s is at most one line (the CLI's errors are).
func isOneLine(s string) bool { return strings.Count(strings.TrimSpace(s), "\n") == 0 }

// The same key twice, or a label the provider already has, is refused
// naming the credential that has it, without a proxy and through one (a
// 409 from the admin API); `remove LABEL` then finds the one credential,
// and a label two providers share is refused naming both IDs.
func TestAddKeyRefusesDuplicates(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	code, out, errs := cli(t, keyA, "add-key", "anthropic", "--label", "work", "--home", home)
	if code != 0 {
		t.Fatalf("add: %d %q", code, errs)
	}
	first := strings.Fields(out)[1]
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct{ key, label, want string }{
			{keyA, "other", "already stored as " + first},
			{keyB, "work", "labelled \"work\": " + first},
		} {
			code, out, errs := cli(t, tc.key, "add-key", "anthropic", "--label", tc.label, "--home", home)
			if code != 1 || !strings.Contains(errs, tc.want) || !isOneLine(errs) || strings.Contains(errs, "conflict:") ||
				strings.Contains(out+errs, keyA) {
				t.Errorf("%s: add-key %s: %d %q %q", when, tc.label, code, out, errs)
			}
		}
	}
	check("no proxy")
	startHome(t, home, &logBuf{})
	check("proxy running")

	cli(t, keyB, "add-key", "openai", "--label", "work", "--home", home)
	if code, _, errs := cli(t, "", "pause", "work", "--home", home); code != 1 || !strings.Contains(errs, first) || !strings.Contains(errs, "give the ID") {
		t.Errorf("pause of a shared label: %d %q", code, errs)
	}
	if code, out, errs := cli(t, "", "remove", "WORK", "--home", home); code != 1 || !isOneLine(errs) {
		t.Errorf("remove of a shared label: %d %q %q", code, out, errs)
	}
	cli(t, "", "remove", first, "--home", home)
	if code, out, errs := cli(t, "", "remove", "work", "--home", home); code != 0 || !strings.HasPrefix(out, "removed openai-") {
		t.Errorf("remove by its label: %d %q %q", code, out, errs)
	}
	if code, _, errs := cli(t, "", "remove", "work", "--home", home); code != 1 || !strings.Contains(errs, "subpool list") {
		t.Errorf("remove of a label no one has: %d %q", code, errs)
	}
}

// A key shaped like another provider's is taken, with a warning naming
// the provider it looks like; the right shape, or a custom provider's
// key, says nothing.
func TestAddKeyWarnsOfAnotherProvidersShape(t *testing.T) {
	for _, tc := range []struct{ provider, key, want string }{
		{"anthropic", "sk-proj-abc", "openai"},
		{"anthropic", "sk-abc", "openai"},
		{"anthropic", "AIzaSyabc", "google"},
		{"openai", "sk-ant-api03-abc", "anthropic"},
		{"google", "sk-proj-abc", "openai"},
		{"anthropic", "sk-ant-api03-abc", ""},
		{"openai", "sk-svcacct-abc", ""},
		{"google", "AIzaSyabc", ""},
		{"zai", "sk-ant-abc", ""},
	} {
		got := keyShapeWarning(tc.provider, tc.key)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, "`subpool add-key "+tc.want+"`") {
			t.Errorf("%s %s: %q", tc.provider, tc.key, got)
		}
	}
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	code, out, errs := cli(t, "sk-proj-0123456789abcdef", "add-key", "anthropic", "--label", "oops", "--home", home)
	if code != 0 || !strings.Contains(errs, "warning") || !strings.Contains(errs, "openai") || !strings.Contains(out, "added") || strings.Contains(errs, "0123456789abcdef") {
		t.Fatalf("add-key of an OpenAI-shaped key: %d %q %q", code, out, errs)
	}
}

// A mistyped verb, provider, tool or class gets a "did you mean"; one
// table of aliases serves every verb (claude was unknown to add-key and
// env); bad input exits 2 with one line.
func TestSuggestionsAndAliases(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"lsit"}, `did you mean "list"`},
		{"", []string{"histroy"}, `did you mean "history"`},
		{"", []string{"add-ky"}, `did you mean "add-key"`},
		{"k", []string{"add-key", "antropic", "--label", "x", "--home", home}, `did you mean "anthropic"`},
		{"k", []string{"add-key", "opnai", "--label", "x", "--home", home}, `did you mean "openai"`},
		{"", []string{"login", "gogle", "--home", home}, `did you mean "google"`},
		{"", []string{"import", "claude-cod", "--home", home}, `did you mean "claude-code"`},
		{"", []string{"env", "opencod", "--home", home}, `did you mean "opencode"`},
		{"", []string{"history", "--class", "rate-limit", "--home", home}, `did you mean "rate_limit"`},
		{"", []string{"history", "--class", "garbage", "--home", home}, "is not a class"},
		{"", []string{"reserve", "anthropic-1a2b3c", "-5", "--home", home}, `"-5" is not a percent`},
		{"", []string{"client", "lsit", "--home", home}, `did you mean "list"`},
		{"", []string{"client", "add", "aider", "--providers", "anthropic,opneai", "--home", home}, `did you mean "openai"`},
		{"", []string{"classify", "--provider", "antropic", "--status", "429"}, `did you mean "anthropic"`},
	} {
		code, out, errs := cli(t, tc.stdin, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || !isOneLine(errs) {
			t.Errorf("%v: %d %q %q", tc.args, code, out, errs)
		}
	}
	code, out, errs := cli(t, keyA, "add-key", "claude", "--label", "alias", "--home", home)
	if code != 0 || !strings.Contains(out, "(anthropic, alias)") {
		t.Errorf("add-key claude: %d %q %q", code, out, errs)
	}
	if code, _, errs := cli(t, "", "client", "add", "aider", "--providers", "claude", "--home", home); code != 0 {
		t.Errorf("client add --providers claude: %d %q", code, errs)
	}
	if code, out, errs := cli(t, "", "classify", "--provider", "claude", "--status", "429"); code != 0 || !strings.Contains(out, `"rate_limit"`) {
		t.Errorf("classify --provider claude: %d %q %q", code, out, errs)
	}
	for _, tool := range []string{"claude", "gemini"} {
		if code, out, errs := cli(t, "", "env", tool, "--home", home); code != 0 || !strings.Contains(out, "_BASE_URL=") {
			t.Errorf("env %s: %d %q %q", tool, code, out, errs)
		}
	}
}

// history's columns say what they are (two were TIME), and a class it
// knows, with no rows, is not an error.
func TestHistoryColumnsAndClass(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	s := startHome(t, home, &logBuf{})
	s.History().Emit(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", Model: "claude-sonnet-4-5", Class: "ok", LatencyMS: 900})
	if err := s.History().Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "", "history", "--home", home)
	if code != 0 {
		t.Fatalf("history: %d %q", code, errs)
	}
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	seen := map[string]int{}
	for _, h := range header {
		seen[h]++
	}
	if seen["TIME"] != 1 || seen["DURATION"] != 1 {
		t.Errorf("history's columns: %v", header)
	}
	if code, out, errs := cli(t, "", "history", "--class", "payment", "--home", home); code != 0 || !strings.Contains(out, "no requests") {
		t.Errorf("history --class payment: %d %q %q", code, out, errs)
	}
}

// help VERB is VERB --help (it printed the top-level help), and every
// verb's page has one layout: the usage line, the summary, the options,
// an example.
func TestHelpPagesShareOneLayout(t *testing.T) {
	_, top, _ := cli(t, "", "help")
	for _, c := range commands {
		_, viaHelp, _ := cli(t, "", "help", c.name)
		code, page, errs := cli(t, "", c.name, "--help")
		if code != 0 || page != viaHelp || page == top {
			t.Errorf("help %s differs from %s --help (%d %q)", c.name, c.name, code, errs)
			continue
		}
		if !strings.HasPrefix(page, "Usage: subpool "+c.name) || !strings.Contains(page, "\nExample:\n  ") {
			t.Errorf("%s --help is not in the layout:\n%s", c.name, page)
		}
		ex := page[strings.Index(page, "\nExample:\n"):]
		if i := strings.Index(page, "\n  --home"); i > len(page)-len(ex) {
			t.Errorf("%s --help: the options come after the example", c.name)
		}
	}
	if code, _, errs := cli(t, "", "help", "frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("help of an unknown verb: %d %q", code, errs)
	}
}

// `subpool --home DIR` is the tray on that home (a hidden `tray` verb
// took it, and `--home` was an unknown command). With no display here,
// the tray's own refusal is the proof it was reached.
func TestHomeFlagAloneIsTheTray(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	_, _, want := cli(t, "", "tray", "--home", t.TempDir())
	code, out, errs := cli(t, "", "--home", t.TempDir())
	if code == 0 || errs != want || strings.Contains(errs, "unknown command") {
		t.Fatalf("subpool --home: %d %q %q, want the tray's %q", code, out, errs, want)
	}
}

// A login with no browser opened and stdin at its end stops with what to
// do; it waited its whole 15 minutes.
func TestLoginEndsWhenNothingCanFinishIt(t *testing.T) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	home := oauthHome(t, oa)
	withBrowser(t, func(string) error { return os.ErrNotExist })
	for _, args := range [][]string{{"login", "anthropic", "--home", home}, {"login", "openai", "--no-browser", "--home", home}} {
		done := make(chan struct{})
		var out, errb bytes.Buffer
		code := -1
		go func() {
			code = run(args, strings.NewReader(""), &out, &errb)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("%v still waits with stdin at its end", args)
		}
		if code != 1 || !strings.Contains(errb.String(), "input ended") || !isOneLine(errb.String()) {
			t.Errorf("%v: %d %q", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "Waiting up to 15 minutes") {
			t.Errorf("%v does not say how long it waits: %q", args, out.String())
		}
	}
}

// Every error exits non-zero: a walk over verbs given bad input.
func TestEveryErrorExitsNonZero(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	for _, args := range [][]string{
		{"list", "extra"}, {"remove"}, {"pause", "nope"}, {"resume", "nope"}, {"reset", "nope"},
		{"reserve", "nope", "10"}, {"reserve", "nope", "100"}, {"tools", "nope", "all"}, {"env"},
		{"usage", "--by", "galaxy"}, {"usage", "--since", "yesterday-ish"}, {"history", "-n", "0"},
		{"client", "revoke", "nope"}, {"client", "frob"}, {"demo", "--listen", "0.0.0.0:1"}, {"events"},
		{"import", "cursor"}, {"login", "zai"}, {"serve", "--listen", "nonsense"},
	} {
		code, out, errs := cli(t, "", append(args, "--home", home)...)
		if code == 0 || errs == "" || !isOneLine(errs) {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
}
