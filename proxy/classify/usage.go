package classify

// cleanStatus keeps the upstream's own word if it is a word.
func cleanStatus(s string) string {
	if len(s) > 32 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return ""
		}
	}
	return s
}
