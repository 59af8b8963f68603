package proxy

import (
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/classify"
)

type simOpts = sim.Options

func lookup(name string) *classify.Profile { return classify.Lookup(name) }
func custom(name, wire, scope string) *classify.Profile {
	return classify.Custom(name, wire, scope)
}
