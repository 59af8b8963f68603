package main

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// pct is the q-quantile (nearest rank) of ds in microseconds; NaN for none.
func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(0, min(i, len(s)-1))]) / float64(time.Microsecond)
}

// median of xs, ignoring NaN; NaN for none.
func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is p/b, NaN when b is not positive.
func ratio(p, b float64) float64 {
	if b <= 0 || math.IsNaN(b) || math.IsNaN(p) {
		return math.NaN()
	}
	return p / b
}

// num makes NaN and ±Inf JSON-safe (null).
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(formatFloat(f)), nil
}

// UnmarshalJSON reads null back as NaN, so that results rewritten from a
// file (-from, -keep, -gc) judge what was measured: a round with no value
// is not a round of 0.
func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = num(f)
	return err
}

func formatFloat(f float64) string {
	switch a := math.Abs(f); {
	case a >= 1000:
		return trimFloat(f, 0)
	case a >= 10:
		return trimFloat(f, 1)
	case a >= 1:
		return trimFloat(f, 2)
	default:
		return trimFloat(f, 3)
	}
}

func trimFloat(f float64, prec int) string {
	return strconv.FormatFloat(f, 'f', prec, 64)
}
