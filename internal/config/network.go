package config

import "github.com/subpool/subpool/internal/egress"

// Network is [network]: where outbound connections leave from.
type Network struct {
	// Proxy is the egress proxy of every outbound connection (requests,
	// token refreshes, usage polls, a login's token exchange): http://,
	// https:// or socks5://, with user:password when it asks for them.
	// "" (the default) uses the environment's HTTP_PROXY, HTTPS_PROXY
	// and NO_PROXY. A credential's own (add-key/login --proxy) wins. It
	// may hold a password: show it only through egress.Redact.
	Proxy string
}

type networkFile struct {
	Proxy *string `toml:"proxy"`
}

func parseNetwork(nf *networkFile, n *Network, bad badKey) error {
	if nf == nil || nf.Proxy == nil {
		return nil
	}
	if _, err := egress.Parse(*nf.Proxy); err != nil {
		return bad("network.proxy", "%s", err)
	}
	n.Proxy = *nf.Proxy
	return nil
}
