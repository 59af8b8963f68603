package assets

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func TestIconsDecode(t *testing.T) {
	for _, c := range []struct {
		name    string
		data    []byte
		minSize int
	}{
		{"ready", Ready, 64},
		{"cooling", Cooling, 64},
		{"attention", Attention, 64},
		{"offline", Offline, 64},
		{"icon", Icon, 256}, // packaging wants at least 256×256
	} {
		img, err := png.Decode(bytes.NewReader(c.data))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		b := img.Bounds()
		if b.Dx() != b.Dy() || b.Dx() < c.minSize {
			t.Errorf("%s is %dx%d, want square and at least %d", c.name, b.Dx(), b.Dy(), c.minSize)
		}
		if c.name != "icon" && !hasClearCorner(img) {
			t.Errorf("%s has no transparent corner: a tray icon must not paint its background", c.name)
		}
	}
	// Four states must be four pictures.
	seen := map[string]bool{}
	for _, d := range [][]byte{Ready, Cooling, Attention, Offline} {
		seen[string(d)] = true
	}
	if len(seen) != 4 {
		t.Errorf("only %d distinct tray icons", len(seen))
	}
}

func hasClearCorner(img image.Image) bool {
	_, _, _, a := img.At(img.Bounds().Min.X, img.Bounds().Min.Y).RGBA()
	return a == 0
}
