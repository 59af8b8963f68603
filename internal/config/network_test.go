package config

import (
	"strings"
	"testing"
)

func TestNetworkProxy(t *testing.T) {
	c, err := Parse("config.toml", []byte("[network]\nproxy = \"socks5://u:pw@127.0.0.1:1080\"\n"))
	if err != nil || c.Network.Proxy != "socks5://u:pw@127.0.0.1:1080" {
		t.Fatalf("Parse: %+v %v", c.Network, err)
	}
	if Default().Network.Proxy != "" {
		t.Fatal("a proxy by default")
	}
	_, err = Parse("config.toml", []byte("[network]\nproxy = \"ftp://u:pw@127.0.0.1:21\"\n"))
	if err == nil || !strings.Contains(err.Error(), "network.proxy") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("bad scheme: %v, want an error naming network.proxy without the address", err)
	}
	d := Diff(Default(), c)
	if len(d.Live) != 1 || d.Live[0] != "network" || len(d.Restart) != 0 {
		t.Fatalf("Diff = %+v, want network applied live", d)
	}
}
