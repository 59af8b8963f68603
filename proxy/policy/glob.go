package policy

import "strings"

// Glob reports whether s matches pattern, where '*' matches any run of
// characters (none included) and everything else itself. Model names
// carry '/' ("openai/gpt-5") and '.', so path.Match's rules would
// surprise.
func Glob(pattern, s string) bool {
	first, rest, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	// Cut, not Split: Glob runs on every request's model against each
	// pattern, and Split allocates the pieces every time.
	for {
		p, more, wild := strings.Cut(rest, "*")
		if !wild {
			return len(s) >= len(p) && strings.HasSuffix(s, p)
		}
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s, rest = s[i+len(p):], more
	}
}
