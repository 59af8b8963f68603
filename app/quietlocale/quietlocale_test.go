package quietlocale

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets the test binary report, as a child, what init left in the
// environment.
func TestMain(m *testing.M) {
	if os.Getenv("QUIETLOCALE_CHILD") == "1" {
		fmt.Print(os.Getenv("LANGUAGE"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestInitSetsLanguageOnlyForCLocales(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"LANG=C.UTF-8"}, "en"},
		{[]string{"LC_ALL=POSIX.utf8", "LANG=de_DE.UTF-8"}, "en"},
		{[]string{"LANG=C"}, ""},                        // understood as is
		{[]string{"LANG=de_DE.UTF-8"}, ""},              // a real locale
		{[]string{"LANG=C.UTF-8", "LANGUAGE=fr"}, "fr"}, // the user's choice stands
		{[]string{"LC_ALL=de_DE.UTF-8", "LANG=C.UTF-8"}, ""},
		{nil, ""},
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append([]string{"QUIETLOCALE_CHILD=1"}, tc.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%v: LANGUAGE=%q, want %q", tc.env, got, tc.want)
		}
	}
}
