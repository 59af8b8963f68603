//go:build ignore

// Command gen draws subpool's icons: the tray glyph in its four states and
// the app icon. Run from the repository root: go run ./assets/gen
//
// The glyph is a ring: the pool. Each state differs in shape as well as in
// colour, so it reads for colour-blind users and in monochrome trays:
// ready is a closed ring with a dot inside, cooling an open ring (a
// countdown), attention a ring with a "!" badge, offline a grey ring struck
// through. Every shape has a dark outline so it holds on light panels; the
// fills are mid-tones so it holds on dark ones.
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

// shape reports whether (x, y), in unit coordinates, lies inside the shape
// grown by g (g > 0 for the outline pass).
type shape func(x, y, g float64) bool

type layer struct {
	s    shape
	grow float64
	c    color.NRGBA
}

var (
	green   = color.NRGBA{0x2e, 0xa0, 0x4f, 0xff}
	blue    = color.NRGBA{0x3b, 0x82, 0xf0, 0xff}
	amber   = color.NRGBA{0xf2, 0xa9, 0x00, 0xff}
	red     = color.NRGBA{0xd9, 0x3b, 0x30, 0xff}
	grey    = color.NRGBA{0x9a, 0xa0, 0xa6, 0xff}
	white   = color.NRGBA{0xff, 0xff, 0xff, 0xff}
	ink     = color.NRGBA{0x15, 0x18, 0x1c, 0xe0}
	navy    = color.NRGBA{0x17, 0x2b, 0x4d, 0xff}
	teal    = color.NRGBA{0x4f, 0xd8, 0xc9, 0xff}
	strokeW = 0.045 // outline width, in units of the icon
)

const (
	cx, cy = 0.5, 0.5
	ringR  = 0.33 // ring centre-line radius
	ringT  = 0.13 // ring thickness
)

func dist(x0, y0, x1, y1 float64) float64 { return math.Hypot(x1-x0, y1-y0) }

func ring(x, y, g float64) bool {
	return math.Abs(dist(cx, cy, x, y)-ringR) <= ringT/2+g
}

func disc(px, py, r float64) shape {
	return func(x, y, g float64) bool { return dist(px, py, x, y) <= r+g }
}

// openRing is the ring without its top-right quarter.
func openRing(x, y, g float64) bool {
	return ring(x, y, g) && !(x >= cx+g && y <= cy-g)
}

// segment is a thick line from (x0,y0) to (x1,y1), round-capped.
func segment(x0, y0, x1, y1, w float64) shape {
	return func(x, y, g float64) bool {
		dx, dy := x1-x0, y1-y0
		t := ((x-x0)*dx + (y-y0)*dy) / (dx*dx + dy*dy)
		t = math.Max(0, math.Min(1, t))
		return dist(x0+t*dx, y0+t*dy, x, y) <= w/2+g
	}
}

// minus cuts b, grown by gap, out of a: the clear space that keeps a badge
// or a slash apart from the ring at small sizes.
func minus(a, b shape, gap float64) shape {
	return func(x, y, g float64) bool { return a(x, y, g) && !b(x, y, gap-g) }
}

func roundRect(x0, y0, x1, y1, r float64) shape {
	return func(x, y, g float64) bool {
		qx := math.Max(math.Max(x0+r-x, x-(x1-r)), 0)
		qy := math.Max(math.Max(y0+r-y, y-(y1-r)), 0)
		if x < x0-g || x > x1+g || y < y0-g || y > y1+g {
			return false
		}
		return math.Hypot(qx, qy) <= r+g
	}
}

// outlined draws s with the ink outline under it.
func outlined(s shape, c color.NRGBA) []layer {
	return []layer{{s, strokeW, ink}, {s, 0, c}}
}

func render(size int, layers []layer) *image.NRGBA {
	const ss = 4 // supersampling per axis
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, a float64 // premultiplied
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/ss) / float64(size)
					y := (float64(py) + (float64(sy)+0.5)/ss) / float64(size)
					var cr, cg, cb, ca float64
					for _, l := range layers {
						if !l.s(x, y, l.grow) {
							continue
						}
						la := float64(l.c.A) / 255
						cr = float64(l.c.R)/255*la + cr*(1-la)
						cg = float64(l.c.G)/255*la + cg*(1-la)
						cb = float64(l.c.B)/255*la + cb*(1-la)
						ca = la + ca*(1-la)
					}
					r, g, b, a = r+cr, g+cg, b+cb, a+ca
				}
			}
			n := float64(ss * ss)
			r, g, b, a = r/n, g/n, b/n, a/n
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{
				R: uint8(math.Round(r / a * 255)), G: uint8(math.Round(g / a * 255)),
				B: uint8(math.Round(b / a * 255)), A: uint8(math.Round(a * 255)),
			})
		}
	}
	return img
}

func cat(ls ...[]layer) []layer {
	var out []layer
	for _, l := range ls {
		out = append(out, l...)
	}
	return out
}

func main() {
	const tray = 64
	badge := disc(0.74, 0.74, 0.2)
	bang := func(x, y, g float64) bool {
		return segment(0.74, 0.635, 0.74, 0.76, 0.07)(x, y, g) || disc(0.74, 0.845, 0.04)(x, y, g)
	}
	slash := segment(0.16, 0.84, 0.84, 0.16, 0.11)

	icons := map[string]*image.NRGBA{
		"ready.png": render(tray, cat(
			outlined(ring, green),
			outlined(disc(cx, cy, 0.11), green),
		)),
		"cooling.png": render(tray, outlined(openRing, blue)),
		"attention.png": render(tray, cat(
			outlined(minus(ring, badge, 0.05), amber),
			outlined(badge, red),
			[]layer{{bang, 0, white}},
		)),
		"offline.png": render(tray, cat(
			outlined(minus(ring, slash, 0.06), grey),
			outlined(slash, grey),
		)),
		"icon.png": render(512, []layer{
			{roundRect(0.04, 0.04, 0.96, 0.96, 0.2), 0, navy},
			{ring, 0, teal},
			{disc(cx, cy, 0.11), 0, teal},
		}),
	}
	for name, img := range icons {
		f, err := os.Create(filepath.Join("assets", name))
		if err != nil {
			log.Fatal(err)
		}
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(f, img); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}
