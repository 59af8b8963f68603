package policy

import (
	"reflect"
	"testing"
)

// TestPlan: the ordered targets of a request, one named row per case, so
// that changing a rule fails exactly the rows that describe it.
func TestPlan(t *testing.T) {
	opus := Rung{"anthropic", "claude-opus-4-5"}
	gpt := Rung{"openai", "gpt-5.1"}
	sonnet := Rung{"anthropic", "claude-sonnet-4-5"}
	zai := Rung{"zai", "glm-4.6"}
	own := func(g Rung) Target { return Target{Rung: g, MayWait: true} }
	rows := []struct {
		name string
		r    PlanRequest
		want []Target
	}{
		{"no alias, no ladder: the route's own provider, which may wait",
			PlanRequest{Provider: "anthropic", Model: "claude-opus-4-5", Carries: true},
			[]Target{own(opus)}},
		{"fallback rungs follow, each only with a ready credential now",
			PlanRequest{Provider: "anthropic", Model: "claude-opus-4-5", Ladder: []Rung{gpt, zai}, Carries: true},
			[]Target{own(opus), {Rung: gpt, Detour: true, Check: true, MayWait: true}, {Rung: zai, Detour: true, Check: true, MayWait: true}}},
		{"a route no other wire speaks takes no fallback (count_tokens, embeddings, a GET)",
			PlanRequest{Provider: "anthropic", Model: "claude-opus-4-5", Ladder: []Rung{gpt}},
			[]Target{own(opus)}},
		{"a one-target alias is the request's own, renamed",
			PlanRequest{Provider: "anthropic", Model: "opus", Alias: []Rung{opus}, Carries: true},
			[]Target{{Rung: opus, MayWait: true}}},
		{"a one-target alias on another provider is a detour, with a ready credential now",
			PlanRequest{Provider: "anthropic", Model: "fast", Alias: []Rung{gpt}, Carries: true},
			[]Target{{Rung: gpt, Detour: true, Check: true, MayWait: true}}},
		{"a ladder rung on the request's own provider is skipped",
			PlanRequest{Provider: "anthropic", Model: "claude-opus-4-5", Ladder: []Rung{sonnet, gpt}, Carries: true},
			[]Target{own(opus), {Rung: sonnet, Check: true, MayWait: true, Skip: "not a provider of this proxy"}, {Rung: gpt, Detour: true, Check: true, MayWait: true}}},
		{"an alias list: each target with a ready credential, none waiting, then its own first target waiting",
			PlanRequest{Provider: "anthropic", Model: "best", Alias: []Rung{opus, gpt}, Ladder: []Rung{zai}, Carries: true},
			[]Target{{Rung: opus, Check: true}, {Rung: gpt, Detour: true, Check: true}, own(opus)}},
		{"an alias list led by another provider has no waiting turn at the end",
			PlanRequest{Provider: "anthropic", Model: "best", Alias: []Rung{gpt, sonnet}, Carries: true},
			[]Target{{Rung: gpt, Detour: true, Check: true}, {Rung: sonnet, Check: true}}},
		{"an alias list on a route that cannot be carried: other providers are skipped, saying why",
			PlanRequest{Provider: "anthropic", Model: "best", Alias: []Rung{opus, gpt}},
			[]Target{{Rung: opus, Check: true}, {Rung: gpt, Detour: true, Check: true, Skip: "this route cannot be carried to another provider"}, own(opus)}},
	}
	for _, row := range rows {
		if got := Plan(row.r); !reflect.DeepEqual(got, row.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", row.name, got, row.want)
		}
	}
}
