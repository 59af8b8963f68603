//go:build unix

package realclients

import (
	"strings"
	"testing"
	"time"
)

// Gemini CLI set to another Gemini API version (GOOGLE_GENAI_API_VERSION)
// reaches the pool as the default one does (a 404 before, issue 44): on
// a Gemini key it is asked in the client's version.
func TestGeminiCLIOnEveryAPIVersion(t *testing.T) {
	for _, version := range []string{"v1", "v1alpha"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			k := fakeKey("google", "ver-"+version)
			up.AddGoogleKey(k)
			s := serve(t, up, "", apiKey{"google", "main", k})
			s.personEnv = map[string]string{"GOOGLE_GENAI_API_VERSION": version}
			a, r := s.gemini(t, 60*time.Second, geminiAPI, "say hi")
			calls := up.modelCalls()
			t.Logf("%s\nupstream:%s", r, up.describe())
			if r.err != nil || !strings.Contains(a.Response, "pong-from-sim") {
				t.Fatalf("no answer on %s: %s", version, r)
			}
			if len(calls) != 1 || !strings.HasPrefix(calls[0].Path, "/"+version+"/models/gemini-2.5-flash:") {
				t.Fatalf("want one call in %s:%s", version, up.describe())
			}
		})
	}
}
