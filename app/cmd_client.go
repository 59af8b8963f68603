package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// keyedBackend is a backend with the home's keychain beside it, for
// reading a client key that exists.
type keyedBackend struct {
	admin.Backend
	keys func() (keychain.Store, error)
}

// withKeys is withBackend with the home's keychain: the running proxy's
// client and a keychain of this process, or the home opened in place and
// its own.
func withKeys(homeFlag string, fn func(ctx context.Context, b keyedBackend) error) error {
	return onHome(homeFlag, func(c *client.Client, home string, cfg config.Config) keyedBackend {
		return keyedBackend{c, daemon.LazyKeys(cfg.KeychainBackend, home)}
	}, func(home string, cfg config.Config) (keyedBackend, io.Closer, error) {
		d, err := openInPlace(home, cfg)
		if err != nil {
			return keyedBackend{}, nil, err
		}
		return keyedBackend{d, d.Keys}, d, nil
	}, fn)
}

func cmdClient(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, `Usage: subpool client add NAME [--providers P,...] [--models GLOB,...]
       subpool client list [--json]
       subpool client revoke NAME

One client key per tool, so each can be told apart, limited and revoked on
its own. The key is shown once, by add (and by subpool env TOOL, which uses
the key named after the tool). Limits: --providers (anthropic, openai, ...)
and --models ('*' matches any characters, e.g. claude-*); anything else gets
a 403 and never reaches an upstream. The key of earlier versions is "default".
Every subcommand takes --home DIR.

Example:
  subpool client add aider --providers anthropic --models 'claude-*'
`)
		return 0
	}
	switch args[0] {
	case "add":
		return cmdClientAdd(args[1:], stdout, stderr)
	case "list":
		return cmdClientList(args[1:], stdout, stderr)
	case "revoke":
		return cmdClientRevoke(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "subpool client: unknown subcommand %q;%s use add, list or revoke\n", args[0], didYouMean(args[0], []string{"add", "list", "revoke"}))
	return 2
}

// listFlag gathers a flag given several times, each possibly a
// comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func cmdClientAdd(args []string, stdout, stderr io.Writer) int {
	f := newFlags("client add", "NAME [--providers P,...] [--models GLOB,...] [--home DIR]",
		"Makes a client key for one tool and prints it, this once. Limits are optional.")
	var provs, models listFlag
	f.Var(&provs, "providers", "providers the key may use (default: all)")
	f.Var(&models, "models", "model patterns the key may ask for, '*' for any characters (default: all)")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one client, e.g. subpool client add aider", stdout, stderr); done {
		return code
	}
	if len(provs) > 0 {
		_, cfg, err := homeConfig(*home)
		if err != nil {
			return fail(stderr, "client add", err)
		}
		for i, p := range provs {
			if provs[i], err = resolveName(p, "provider", cfg.ProviderNames(), providerAliases); err != nil {
				fmt.Fprintf(stderr, "subpool client add: --providers: %v\n", err)
				return 2
			}
		}
	}
	added, err := fromBackend(*home, func(ctx context.Context, ops admin.Backend) (api.ClientAdded, error) {
		return ops.AddClient(ctx, api.AddClient{Name: f.pos[0], Providers: provs, Models: models})
	})
	if err != nil {
		return fail(stderr, "client add", err)
	}
	fmt.Fprintf(stdout, "client %s: %s\n", added.Name, added.Key)
	fmt.Fprintln(stderr, "The key is shown this once; the tool sends it as x-api-key or Authorization: Bearer.")
	return 0
}

func cmdClientList(args []string, stdout, stderr io.Writer) int {
	f := newFlags("client list", "[--json] [--home DIR]", "Lists the client keys by name, with their limits and requests in flight; never a key.")
	asJSON := f.Bool("json", false, "JSON, for scripts")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	list, err := fromBackend(*home, func(ctx context.Context, ops admin.Backend) ([]api.ClientStatus, error) {
		return ops.Clients(ctx)
	})
	if err != nil {
		return fail(stderr, "client list", err)
	}
	if *asJSON {
		if list == nil {
			list = []api.ClientStatus{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(list)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROVIDERS\tMODELS\tIN FLIGHT\tADDED")
	for _, c := range list {
		added := "-"
		if c.Added != nil {
			added = c.Added.Local().Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", c.Name, orAll(c.Providers), orAll(c.Models), c.InFlight, added)
	}
	tw.Flush()
	return 0
}

func orAll(l []string) string {
	if len(l) == 0 {
		return "all"
	}
	return strings.Join(l, ",")
}

func cmdClientRevoke(args []string, stdout, stderr io.Writer) int {
	f := newFlags("client revoke", "NAME [--home DIR]", "Deletes a client key; the proxy refuses it from its next request.")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one client (see `subpool client list`)", stdout, stderr); done {
		return code
	}
	err := withBackend(*home, func(ctx context.Context, ops admin.Backend) error {
		return ops.RevokeClient(ctx, f.pos[0])
	})
	if err != nil {
		return fail(stderr, "client revoke", err)
	}
	fmt.Fprintf(stdout, "revoked %s\n", f.pos[0])
	return 0
}

// toolKey is the key of the client named after tool, made when missing:
// what `subpool env TOOL` prints.
func toolKey(homeFlag, tool string) (string, error) {
	var key string
	err := withKeys(homeFlag, func(ctx context.Context, ops keyedBackend) error {
		list, err := ops.Clients(ctx)
		if err != nil {
			return err
		}
		for _, c := range list {
			if c.Name != tool {
				continue
			}
			ks, err := ops.keys()
			if err != nil {
				return err
			}
			k, err := ks.Get(daemon.ClientKeyName(tool))
			if err != nil {
				return fmt.Errorf("cannot read the key of client %q from the %s keychain (%v); `subpool client revoke %s` and run this again", tool, ks.Name(), err, tool)
			}
			key = k
			return nil
		}
		added, err := ops.AddClient(ctx, api.AddClient{Name: tool})
		key = added.Key
		return err
	})
	return key, err
}
