package config

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/policy"
)

// [retry]'s stream deadlines (issue 43): durations, 0 for none, a
// negative one refused with its key (it would read as none), and both
// applied live.
func TestStreamDeadlines(t *testing.T) {
	c, err := Parse("config.toml", []byte("[retry]\nfirst_event_timeout = \"45s\"\nidle_timeout = \"0s\"\n"))
	if err != nil || c.FirstEventTimeout != 45*time.Second || c.IdleTimeout != 0 {
		t.Fatalf("%v %v %v", c.FirstEventTimeout, c.IdleTimeout, err)
	}
	def := Default()
	if p := policy.Defaults(); def.FirstEventTimeout != p.FirstEventTimeout || def.IdleTimeout != p.IdleTimeout || p.FirstEventTimeout <= 0 || p.IdleTimeout <= 0 {
		t.Fatalf("defaults %v %v, policy's %v %v", def.FirstEventTimeout, def.IdleTimeout, p.FirstEventTimeout, p.IdleTimeout)
	}
	for _, key := range []string{"first_event_timeout", "idle_timeout"} {
		_, err := Parse("config.toml", []byte("[retry]\n"+key+" = \"-5m\"\n"))
		if err == nil || !strings.Contains(err.Error(), "config.toml: retry."+key+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("negative %s: error %v, want one line naming retry.%s", key, err, key)
		}
	}
	r := Diff(def, c)
	if strings.Join(r.Live, ",") != "retry.first_event_timeout,retry.idle_timeout" || len(r.Restart) != 0 {
		t.Fatalf("reload %+v: both deadlines apply live", r)
	}
}
