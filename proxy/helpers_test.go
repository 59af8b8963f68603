package proxy

import (
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/sim"
)

type simOpts = sim.Options

func lookup(name string) *classify.Profile { return classify.Lookup(name) }
func custom(name, wire, scope string) *classify.Profile {
	return classify.Custom(name, wire, scope)
}
