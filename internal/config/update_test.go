package config

import (
	"strings"
	"testing"
)

func TestUpdateSection(t *testing.T) {
	if d := Default().Update; d.Feed != DefaultFeed || !d.Check {
		t.Fatalf("default [update] = %+v", d)
	}
	c, err := Parse("c.toml", []byte("[update]\nfeed = \"http://127.0.0.1:9/latest\"\ncheck = false\n"))
	if err != nil || c.Update.Feed != "http://127.0.0.1:9/latest" || c.Update.Check {
		t.Fatalf("Parse = %+v, %v", c.Update, err)
	}
	for _, feed := range []string{"http://example.com/latest", "https://x/latest?user=me", "releases/latest", "ftp://h/x"} {
		_, err := Parse("c.toml", []byte("[update]\nfeed = \""+feed+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), "c.toml: update.feed: ") || !strings.Contains(err.Error(), "https://") {
			t.Errorf("feed %q: %v", feed, err)
		}
	}
}
