package ui

import (
	"fmt"
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
)

// luminance is WCAG 2's relative luminance of c, composited over bg when
// c is translucent.
func luminance(c, bg color.Color) float64 {
	r, g, b, a := c.RGBA()
	br, bgg, bb, _ := bg.RGBA()
	mix := func(x, y uint32) float64 {
		f := (float64(x) + float64(y)*(1-float64(a)/0xffff)) / 0xffff // premultiplied over opaque bg
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	return 0.2126*mix(r, br) + 0.7152*mix(g, bgg) + 0.0722*mix(b, bb)
}

// contrast is WCAG 2's contrast ratio of text fg on an opaque bg.
func contrast(fg, bg color.Color) float64 {
	a, b := luminance(fg, bg), luminance(bg, bg)
	if a < b {
		a, b = b, a
	}
	return (a + 0.05) / (b + 0.05)
}

// textPairs are the text colours of the panel over the surfaces they are
// drawn on: labels of every importance (the metadata line and "Serves …"
// are low importance, so the disabled colour) on the window, the card,
// a dialog and a menu; button texts on their buttons, disabled included;
// input text and its placeholder; a badge's word on its level's fill.
var textPairs = func() [][2]fyne.ThemeColorName {
	var pairs [][2]fyne.ThemeColorName
	labels := []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameDisabled, theme.ColorNamePrimary,
		theme.ColorNameHyperlink, theme.ColorNameWarning, theme.ColorNameError, theme.ColorNameSuccess}
	surfaces := []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameOverlayBackground,
		theme.ColorNameMenuBackground, theme.ColorNameHeaderBackground}
	for _, l := range labels {
		for _, s := range surfaces {
			pairs = append(pairs, [2]fyne.ThemeColorName{l, s})
		}
	}
	return append(pairs,
		[2]fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameButton},
		[2]fyne.ThemeColorName{theme.ColorNameDisabled, theme.ColorNameDisabledButton},
		[2]fyne.ThemeColorName{theme.ColorNameDisabled, theme.ColorNameButton},
		[2]fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameInputBackground},
		[2]fyne.ThemeColorName{theme.ColorNamePlaceHolder, theme.ColorNameInputBackground},
		[2]fyne.ThemeColorName{theme.ColorNameDisabled, theme.ColorNameInputBackground},
		[2]fyne.ThemeColorName{theme.ColorNameForegroundOnPrimary, theme.ColorNamePrimary},
		[2]fyne.ThemeColorName{theme.ColorNameForegroundOnSuccess, theme.ColorNameSuccess},
		[2]fyne.ThemeColorName{theme.ColorNameForegroundOnWarning, theme.ColorNameWarning},
		[2]fyne.ThemeColorName{theme.ColorNameForegroundOnError, theme.ColorNameError},
		[2]fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameDisabledButton}, // a paused badge
	)
}()

// Every text of the panel reads at 4.5:1 or better (WCAG AA) in both
// variants. Fyne's default theme fails 49 of these 78.
func TestThemeContrast(t *testing.T) {
	test.NewTempApp(t)
	th := newPanelTheme()
	for _, v := range []fyne.ThemeVariant{theme.VariantDark, theme.VariantLight} {
		for _, p := range textPairs {
			fg, bg := th.Color(p[0], v), th.Color(p[1], v)
			if c := contrast(fg, bg); c < 4.5 {
				t.Errorf("variant %d: %s %s on %s %s: %.2f:1", v, p[0], hex(fg), p[1], hex(bg), c)
			}
		}
	}
}

// The contrast formula on WCAG's own figures: black on white is 21:1,
// #767676 on white the darkest grey passing 4.5:1.
func TestContrastFormula(t *testing.T) {
	white, black := rgb(0xff, 0xff, 0xff), rgb(0, 0, 0)
	if c := contrast(black, white); math.Abs(c-21) > 0.01 {
		t.Errorf("black on white %.3f", c)
	}
	if c := contrast(rgb(0x76, 0x76, 0x76), white); c < 4.5 || c > 4.6 {
		t.Errorf("#767676 on white %.3f", c)
	}
}

func hex(c color.Color) string {
	r, g, b, a := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x%02x", r>>8, g>>8, b>>8, a>>8)
}
