package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/egress"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/auth"
)

// Where the daemon's outbound connections leave from. One transport
// (egress.Transport over [network] proxy) carries requests, token
// refreshes, usage polls and Code Assist's setup; a credential's own
// proxy rides on each call's context (auth.WithProxy), looked up here.

// outboundTimeout bounds the short calls: token endpoints, Code Assist's
// setup. Usage polls have their own minute.
const outboundTimeout = 30 * time.Second

// credProxies are the credentials' own proxies, parsed once: every
// request of a credential asks. Its methods are safe for concurrent use.
type credProxies struct {
	mu sync.Mutex
	of map[string]*url.URL
}

// set records id's proxy from its record ("" or unreadable: none; config
// and add-key checked it on the way in).
func (cp *credProxies) set(id, raw string) {
	u, _ := egress.Parse(raw)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if u == nil {
		delete(cp.of, id)
		return
	}
	if cp.of == nil {
		cp.of = map[string]*url.URL{}
	}
	cp.of[id] = u
}

// get is id's own proxy, nil when it has none. A nil credProxies has none.
func (cp *credProxies) get(id string) *url.URL {
	if cp == nil {
		return nil
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.of[id]
}

// withCredential routes calls made with ctx through id's own proxy.
func (cp *credProxies) withCredential(ctx context.Context, id string) context.Context {
	return auth.WithProxy(ctx, cp.get(id))
}

// outbound builds the daemon's egress and the proxy's upstream transport
// through it; a transport given in Options (tests) replaces the transport,
// not the proxy rules.
func outbound(cfg config.Config, given http.RoundTripper) (*egress.Egress, http.RoundTripper, error) {
	eg, err := egress.New(cfg.Network.Proxy)
	if err != nil {
		return nil, nil, err
	}
	if given != nil {
		return eg, given, nil
	}
	t := proxy.NewTransport(cfg.HeaderTimeout)
	t.Proxy = eg.Proxy
	return eg, t, nil
}

// applyNetwork takes a reloaded [network]: a new proxy is a new egress,
// so what the old one's location had parked may be served now.
func (d *Daemon) applyNetwork(n config.Network) {
	if d.egress == nil || n.Proxy == d.netProxy {
		return
	}
	if err := d.egress.SetGlobal(n.Proxy); err != nil {
		d.logf("warning: [network] proxy: %v; keeping the one before", err)
		return
	}
	d.netProxy = n.Proxy
	d.logf("outbound connections now leave through %s", describeEgress(n.Proxy))
	d.core.pool.UnparkEgress("")
}

// regionRefused reports whether err is a token endpoint refusing the
// location the refresh left from.
func regionRefused(err error) bool {
	var te *oauth.TokenError
	return errors.As(err, &te) && strings.EqualFold(te.Code, "unsupported_country_region_territory")
}

// describeEgress names an egress for the log, never with its password.
func describeEgress(raw string) string {
	if raw == "" {
		return "the environment's HTTPS_PROXY and HTTP_PROXY (direct without them)"
	}
	return egress.Redact(raw)
}

// setProxy gives credential id the proxy raw and keeps it in
// credentials.json; the pool learns its new egress, which ends a region
// park of the old one.
func (c *core) setProxy(id, raw string) error {
	rec, changed, err := c.editRecord(id, func(r *CredentialRecord) { r.Proxy = raw })
	if changed {
		c.proxies.set(id, raw)
		c.readd(rec)
	}
	return err
}

// LoginClient carries a login made outside the running proxy (subpool
// login, import): through proxy when given, else [network] proxy, else
// the environment's.
func LoginClient(cfg config.Config, proxy string) (*http.Client, error) {
	raw := cfg.Network.Proxy
	if proxy != "" {
		raw = proxy
	}
	eg, err := egress.New(raw)
	if err != nil {
		return nil, err
	}
	return egress.Client(eg.Transport(), outboundTimeout), nil
}
