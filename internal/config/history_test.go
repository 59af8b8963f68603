package config

import (
	"strings"
	"testing"
)

func TestHistoryAndPrices(t *testing.T) {
	c, err := Parse("config.toml", []byte(DefaultText))
	if err != nil {
		t.Fatal(err)
	}
	if !c.History.Enabled || c.History.Days != 90 || len(c.Prices) != 0 {
		t.Fatalf("defaults: history %+v, prices %v", c.History, c.Prices)
	}
	c, err = Parse("config.toml", []byte(`
[history]
enabled = false
days = 7
[prices]
"my-model" = { input = 3.0, output = 15.0, cache_read = 0.3 }
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.History.Enabled || c.History.Days != 7 {
		t.Fatalf("history = %+v", c.History)
	}
	if p := c.Prices["my-model"]; p != (Price{Input: 3, Output: 15, CacheRead: 0.3}) {
		t.Fatalf("price = %+v", p)
	}
	for text, want := range map[string]string{
		"[history]\ndays = 0":                                "history.days: must be between 1 and 3650",
		"[history]\nkeep = 3":                                "history.keep: unknown key",
		"[prices]\nm = { input = 1.0 }":                      `prices."m": needs input and output`,
		"[prices]\nm = { input = 1.0, output = -2.0 }":       `prices."m".output: -2: must be between 0`,
		"[prices]\nm = { input = 1.0, output = 2.0, x = 1 }": "prices.m.x: unknown key",
	} {
		_, err := Parse("config.toml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
