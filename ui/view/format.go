package view

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Dur writes d the way a countdown reads: rounded up to the second, so a
// cooldown shows "1s" until it is really over, and coarser as it grows
// ("1m05s", "4h05m", "2d3h").
func Dur(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	s := int64(math.Ceil(d.Seconds()))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		m := (s + 59) / 60 // rounded up like the seconds above
		if m%60 == 0 {
			return fmt.Sprintf("%dh", m/60)
		}
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	default:
		h := (s + 3599) / 3600
		if h%24 == 0 {
			return fmt.Sprintf("%dd", h/24)
		}
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	}
}

// Percent writes a 0..1 fraction as a whole percentage.
func Percent(f float64) string {
	return fmt.Sprintf("%d%%", int(math.Round(f*100)))
}

// ProviderTitle is the name a person knows a provider by: the google pool
// (Gemini API keys and Google logins) is Gemini. Custom providers keep
// their configured name.
func ProviderTitle(name string) string {
	switch name {
	case "anthropic":
		return "Claude"
	case "openai":
		return "ChatGPT"
	case "google":
		return "Gemini"
	}
	return name
}

// LoginTitle is whose login a provider's subscription is: a Gemini
// subscription is a Google account's login (Gemini CLI's "Login with
// Google"); the others are their provider's title.
func LoginTitle(provider string) string {
	if provider == "google" {
		return "Google"
	}
	return ProviderTitle(provider)
}

// plural writes "1 request" / "3 requests".
func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// joinNonEmpty joins the parts that say something.
func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
