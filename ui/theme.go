package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// panelTheme is Fyne's default theme with the colours every text and
// control needs for 4.5:1 contrast (WCAG AA) in both variants
// (contrast_test.go checks every pair). The default's disabled and
// placeholder text is #39393a on #171718 in the dark (1.5:1), which made
// the metadata line, "Serves all tools (opted in)" and disabled buttons
// unreadable (issue 42); its green, amber and blue fall under 4.5:1 as text
// on white, or under white text on them.
//
// It is set once on the app, never per widget: a theme set per subtree
// (container.ThemeOverride) makes a new font cache scope each time.
type panelTheme struct{ base fyne.Theme }

func newPanelTheme() fyne.Theme { return panelTheme{base: theme.DefaultTheme()} }

// panelColors are the colours that differ from the default theme's, by
// variant.
var panelColors = map[fyne.ThemeVariant]map[fyne.ThemeColorName]color.Color{
	theme.VariantDark: {
		theme.ColorNameDisabled:            rgb(0x9b, 0x9b, 0xa1),
		theme.ColorNamePlaceHolder:         rgb(0xb2, 0xb2, 0xb2),
		theme.ColorNamePrimary:             rgb(0x6e, 0xa4, 0xff),
		theme.ColorNameHyperlink:           rgb(0x6e, 0xa4, 0xff),
		theme.ColorNameForegroundOnPrimary: rgb(0x17, 0x17, 0x18),
		theme.ColorNameError:               rgb(0xff, 0x6b, 0x5e),
		theme.ColorNameForegroundOnError:   rgb(0x17, 0x17, 0x18),
	},
	theme.VariantLight: {
		theme.ColorNameForeground:          rgb(0x3a, 0x3a, 0x3a),
		theme.ColorNameDisabled:            rgb(0x6b, 0x6b, 0x6b),
		theme.ColorNamePlaceHolder:         rgb(0x6b, 0x6b, 0x6b),
		theme.ColorNamePrimary:             rgb(0x1a, 0x5a, 0xd6),
		theme.ColorNameHyperlink:           rgb(0x1a, 0x5a, 0xd6),
		theme.ColorNameForegroundOnPrimary: rgb(0xff, 0xff, 0xff),
		theme.ColorNameSuccess:             rgb(0x1b, 0x7a, 0x1f),
		theme.ColorNameForegroundOnSuccess: rgb(0xff, 0xff, 0xff),
		theme.ColorNameWarning:             rgb(0x9a, 0x4f, 0x00),
		theme.ColorNameForegroundOnWarning: rgb(0xff, 0xff, 0xff),
		theme.ColorNameError:               rgb(0xc0, 0x27, 0x1d),
		theme.ColorNameForegroundOnError:   rgb(0xff, 0xff, 0xff),
	},
}

func rgb(r, g, b uint8) color.Color { return color.NRGBA{R: r, G: g, B: b, A: 0xff} }

func (t panelTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	// Any variant but light is dark, as in Fyne's own theme (a test app
	// asks for variant 2, "not a preference").
	if v != theme.VariantLight {
		v = theme.VariantDark
	}
	if c, ok := panelColors[v][n]; ok {
		return c
	}
	return t.base.Color(n, v)
}

func (t panelTheme) Font(s fyne.TextStyle) fyne.Resource     { return t.base.Font(s) }
func (t panelTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return t.base.Icon(n) }
func (t panelTheme) Size(n fyne.ThemeSizeName) float32       { return t.base.Size(n) }
