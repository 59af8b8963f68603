//go:build cgo

package app

import (
	"testing"

	"fyne.io/fyne/v2"
)

func TestWindowSize(t *testing.T) {
	for in, want := range map[string]fyne.Size{
		"560x980": fyne.NewSize(560, 980), "600.5x700": fyne.NewSize(600.5, 700),
		"": {}, "560": {}, "x980": {}, "0x980": {}, "560x-1": {}, "tall": {},
	} {
		if got := windowSize(in); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
