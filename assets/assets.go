// Package assets holds subpool's icons, embedded. They are PNG bytes, not
// Fyne resources, so that this package stays free of Fyne: ui wraps them.
// assets/gen draws them; regenerate with `go run assets/gen/main.go`.
package assets

import _ "embed"

// Tray icons, one per tray state: 64×64, shape and colour both differ.
var (
	//go:embed ready.png
	Ready []byte
	//go:embed cooling.png
	Cooling []byte
	//go:embed attention.png
	Attention []byte
	//go:embed offline.png
	Offline []byte
)

// Icon is the app icon (512×512), the one FyneApp.toml and packaging use.
//
//go:embed icon.png
var Icon []byte
