package history

import "testing"

func TestPriceLookupFindsTheFamily(t *testing.T) {
	p := newPrices(map[string]Price{"my-model": {Input: 9}})
	cases := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"gemini-2.5-pro", DefaultPrices["gemini-2.5-pro"], true},
		{"gemini-2.5-flash-lite", DefaultPrices["gemini-2.5-flash-lite"], true}, // not 2.5-flash's
		{"gemini-2.5-flash-preview-09-2025", DefaultPrices["gemini-2.5-flash"], true},
		{"gemini-3-pro-preview", DefaultPrices["gemini-3-pro"], true},
		{"claude-sonnet-4-5-20250929", DefaultPrices["claude-sonnet-4"], true},
		{"my-model", Price{Input: 9}, true},
		{"gemini-2.5-professional", Price{}, false}, // a name, not a boundary
	}
	for _, c := range cases {
		got, ok := p.lookup(c.model)
		if ok != c.ok || got != c.want {
			t.Errorf("lookup(%q) = %+v, %v; want %+v, %v", c.model, got, ok, c.want, c.ok)
		}
	}
}
