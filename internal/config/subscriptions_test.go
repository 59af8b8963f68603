package config

import (
	"reflect"
	"strings"
	"testing"
)

// A fresh config.toml opens no login to other tools, and says how to.
func TestSubscriptionsDefault(t *testing.T) {
	c, err := Parse("config.toml", []byte(DefaultText))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Subscriptions.OtherTools) != 0 || len(Default().Subscriptions.OtherTools) != 0 {
		t.Fatalf("other_tools %v, default %v", c.Subscriptions.OtherTools, Default().Subscriptions.OtherTools)
	}
	for _, want := range []string{"[subscriptions]", "other_tools = []", "Claude Code only", "extra usage"} {
		if !strings.Contains(DefaultText, want) {
			t.Errorf("the default config.toml does not say %q", want)
		}
	}
}

// other_tools names logins by ID or label; a blank or multi-line name and
// an unknown key in the table are errors naming the key, like the rest of
// the file.
func TestSubscriptionsOtherTools(t *testing.T) {
	c, err := Parse("config.toml", []byte("[subscriptions]\nother_tools = [\"anthropic-1a2b3c\", \" Claude Max \"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"anthropic-1a2b3c", "Claude Max"}; !reflect.DeepEqual(c.Subscriptions.OtherTools, want) {
		t.Fatalf("other_tools %q, want %q", c.Subscriptions.OtherTools, want)
	}
	for _, tc := range []struct{ id, label string }{{"anthropic-1a2b3c", "work"}, {"anthropic-ffffff", "Claude Max"}} {
		if !c.Subscriptions.OpensToOthers(tc.id, tc.label) {
			t.Errorf("%s (%s) is not opened", tc.id, tc.label)
		}
	}
	if c.Subscriptions.OpensToOthers("anthropic-ffffff", "claude max") || (Subscriptions{}).OpensToOthers("", "") {
		t.Error("a login not named is opened")
	}
	for _, bad := range []struct{ text, key string }{
		{"[subscriptions]\nother_tools = [\"\"]", "subscriptions.other_tools[0]"},
		{"[subscriptions]\nother_tools = [\"ok\", \"two\\nlines\"]", "subscriptions.other_tools[1]"},
		{"[subscriptions]\nother_tool = [\"x\"]", "subscriptions.other_tool"},
		{"[subscriptions]\nother_tools = \"x\"", "other_tools"},
	} {
		_, err := Parse("config.toml", []byte(bad.text))
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%q: %v, want an error naming %s", bad.text, err, bad.key)
		}
	}
}

// An edit of other_tools applies live.
func TestSubscriptionsReloadLive(t *testing.T) {
	c, err := Parse("config.toml", []byte("[subscriptions]\nother_tools = [\"work\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := Diff(Default(), c)
	if !reflect.DeepEqual(r.Live, []string{"subscriptions"}) || len(r.Restart) != 0 {
		t.Fatalf("%+v", r)
	}
}
