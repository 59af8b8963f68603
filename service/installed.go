package service

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
)

// installedArgs reads the command line back out of the installed unit or
// plist, so that status reports what is installed rather than what this
// invocation would install. ok is false when the file is missing or is not
// one this package could have written.
func (m *Manager) installedArgs() (args []string, ok bool) {
	data, err := os.ReadFile(m.servicePath())
	if err != nil {
		return nil, false
	}
	if m.goos == "darwin" {
		return plistProgramArguments(data)
	}
	for line := range strings.Lines(string(data)) {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "ExecStart="); found {
			return splitSystemdWords(rest)
		}
	}
	return nil, false
}

// splitSystemdWords undoes systemdCommandLine: words split on blanks, double
// or single quotes group, a backslash escapes the next character, and doubled
// "%" and "$" are single again.
func splitSystemdWords(s string) ([]string, bool) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quote != '\'':
			if i+1 == len(s) {
				return nil, false
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if inWord {
		words = append(words, w.String())
	}
	undouble := strings.NewReplacer("%%", "%", "$$", "$")
	for i := range words {
		words[i] = undouble.Replace(words[i])
	}
	return words, len(words) > 0
}

// plistProgramArguments returns the strings of the ProgramArguments array.
func plistProgramArguments(data []byte) ([]string, bool) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var key string
	var args []string
	inArgs := false
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF included: no ProgramArguments array
			return nil, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "key":
				if err := dec.DecodeElement(&key, &t); err != nil {
					return nil, false
				}
				continue
			case t.Name.Local == "array" && key == "ProgramArguments":
				inArgs = true
			case t.Name.Local == "string" && inArgs:
				var s string
				if err := dec.DecodeElement(&s, &t); err != nil {
					return nil, false
				}
				args = append(args, s)
			}
			key = ""
		case xml.EndElement:
			if inArgs && t.Name.Local == "array" {
				return args, len(args) > 0
			}
		}
	}
}
