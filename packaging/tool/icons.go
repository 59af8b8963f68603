package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
)

// iconSizes are the hicolor sizes the desktop entry's icon comes in: the
// ones desktops ask for in menus, docks and the tray's About.
var iconSizes = []int{16, 24, 32, 48, 64, 128, 256, 512}

// writeIcons draws src at each size into dir/NxN/apps/ID.png.
func writeIcons(src, dir string) error {
	m, err := loadMeta(metaFile)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %v", src, err)
	}
	for _, n := range iconSizes {
		out := filepath.Join(dir, fmt.Sprintf("%dx%d", n, n), "apps", m.ID+".png")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := writePNG(out, scale(img, n)); err != nil {
			return err
		}
	}
	return nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scale shrinks (or copies) src to n x n by averaging each target
// pixel's area, weighted by alpha so transparent edges do not darken.
func scale(src image.Image, n int) *image.NRGBA {
	b := src.Bounds()
	dst := image.NewNRGBA(image.Rect(0, 0, n, n))
	for y := 0; y < n; y++ {
		y0, y1 := b.Min.Y+y*b.Dy()/n, b.Min.Y+(y+1)*b.Dy()/n
		for x := 0; x < n; x++ {
			x0, x1 := b.Min.X+x*b.Dx()/n, b.Min.X+(x+1)*b.Dx()/n
			dst.SetNRGBA(x, y, average(src, x0, y0, max(x1, x0+1), max(y1, y0+1)))
		}
	}
	return dst
}

func average(src image.Image, x0, y0, x1, y1 int) color.NRGBA {
	var r, g, bl, a, count uint64
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			c := color.NRGBA64Model.Convert(src.At(x, y)).(color.NRGBA64)
			w := uint64(c.A)
			r, g, bl, a = r+uint64(c.R)*w, g+uint64(c.G)*w, bl+uint64(c.B)*w, a+w
			count++
		}
	}
	if a == 0 {
		return color.NRGBA{}
	}
	return color.NRGBA{R: uint8(r / a >> 8), G: uint8(g / a >> 8), B: uint8(bl / a >> 8), A: uint8(a / count >> 8)}
}
