package app

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// demoWindows are the subscriptions' windows in the demo's story, set so a
// person watching the panel sees, within three minutes: bars filling with
// every answer; claude-max reaching its reserve (90 % with the demo's 10 %
// reserve) after three of its answers, about a minute in at the default
// pace, and being held back; its 5h window resetting at 2m30s and the
// login coming back; ChatGPT's 5h window resetting at one minute; and
// claude-pro bound by its weekly window, not its 5h one.
var demoWindows = map[string]sim.Windows{
	"claude-max":  {FiveHour: 0.84, SevenDay: 0.46, FiveHourReset: 150 * time.Second, PerFiveHour: 0.02, PerSevenDay: 0.002},
	"claude-pro":  {FiveHour: 0.30, SevenDay: 0.74, PerFiveHour: 0.01, PerSevenDay: 0.004},
	"chatgpt-pro": {FiveHour: 0.55, SevenDay: 0.22, FiveHourReset: time.Minute, PerFiveHour: 0.03, PerSevenDay: 0.003},
}

// demoKeyQuota is the demo API keys' tier: a few requests per window,
// announced. Unlike a subscription, an API key reports no usage window,
// so the pool ranks it as having all its room; without a limit it would
// take every request and the subscriptions' bars would never move.
var demoKeyQuota = sim.Quota{Requests: 3, Window: 20 * time.Second, Announce: true}

// armWindows gives each demo login its windows, again whenever a refresh
// has replaced its access token (the sim would otherwise stop reporting
// them): the story then starts over for that login. Each API key gets
// its quota once.
func (d *demo) armWindows() {
	for _, c := range demoCreds {
		secret, _ := d.secret(c.label)
		if secret == "" || d.armed[c.label] == secret {
			continue
		}
		if w, ok := demoWindows[c.label]; ok {
			d.sim.SetWindows(secret, w)
		} else if c.key != "" {
			d.sim.SetQuota(secret, demoKeyQuota)
		}
		d.armed[c.label] = secret
	}
}

// demoGoogleLogin is the demo's Google account. Its day is a small one,
// two models of it shown, so that each answer moves a bar by a point.
var demoGoogleLogin = sim.GoogleLogin{Email: "demo@example.com", DailyRequests: 100,
	Models: []string{"gemini-2.5-pro", "gemini-2.5-flash"}}

// demoGoogleDay is what the Google login has spent of its day when the
// demo starts, by model: a working day under way, as demoWindows sets the
// other logins' windows part full.
var demoGoogleDay = map[string]int{"gemini-2.5-pro": 9, "gemini-2.5-flash": 38}

// startGoogleDay spends demoGoogleDay on the simulated Code Assist, as
// Gemini CLI would have that morning. The sim counts a login's day from
// its requests alone, so there is no other way to set it.
func startGoogleDay(up *sim.Server, access, project string) error {
	errs := make(chan error)
	n := 0
	for model, k := range demoGoogleDay {
		for range k {
			n++
			go func() {
				body := fmt.Sprintf(`{"model":%q,"project":%q,"request":{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}}`, model, project)
				req, _ := http.NewRequest(http.MethodPost, up.URL()+"/v1internal:generateContent", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+access)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("Code Assist answered %d", resp.StatusCode)
					}
				}
				errs <- err
			}()
		}
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
