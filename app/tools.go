package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// Which tools a subscription login serves. By default a login serves the
// tool it belongs to (api.SubscriptionTool: a Claude login Claude Code, a
// Google login Gemini CLI) and the pool keeps every other tool off it. A
// person opens a login to every tool with `subpool tools ID all`, the
// tray's toggle or the admin API (kept in credentials.json, beside the
// label: a choice about the credential, which a damaged state file must
// not undo), or by naming it in config.toml's [subscriptions] other_tools.
// Either opens it; the pool sees one flag, pool.Credential.OtherTools.

// billingWarning is the one line said whenever a Claude login is opened to
// other tools.
const billingWarning = "Anthropic bills other tools' use of a Claude subscription as extra usage, apart from the plan's own limits"

// googleTermsWarning is the one line said whenever a Google login is
// opened to other tools.
const googleTermsWarning = "Google grants this login for Gemini CLI under the Gemini Code Assist terms; other tools' use of it may break those terms and put the Google account at risk"

func cmdTools(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("tools", "ID|LABEL all|own [--home DIR]",
		"Says which tools may use a subscription login. By default a Claude login serves Claude Code only and a Google login Gemini CLI only\n"+
			"(the tool is known by its User-Agent); other tools' requests go to API keys or fallback. `all` lets every tool use it, `own` keeps it\n"+
			"for its own tool again. Anthropic bills other tools' use of a Claude subscription as extra usage; Google grants its login\n"+
			"for Gemini CLI under the Gemini Code Assist terms.\n"+
			"ChatGPT logins and API keys serve every tool. config.toml's [subscriptions] other_tools does the same as `all`.\n"+
			"Example: subpool tools anthropic-1a2b3c all")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 2, "name one credential ID and `all` or `own`, e.g. `subpool tools ID all` (see `subpool list`)", stdout, stderr); done {
		return code
	}
	id, mode := f.pos[0], strings.ToLower(f.pos[1])
	if mode != "all" && mode != "own" {
		fmt.Fprintf(stderr, "subpool tools: %q is neither `all` (every tool may use the login) nor `own` (only its own tool)\n", f.pos[1])
		return 2
	}
	on := mode == "all"
	var cred api.CredentialStatus
	var already bool
	err := withBackend(*home, func(ctx context.Context, b admin.Backend) error {
		var err error
		if cred, err = findCredential(ctx, b, id); err != nil {
			return err
		}
		if cred.OwnTool == "" {
			// An API key or a ChatGPT login: nothing to open.
			already = true
			return nil
		}
		err = b.SetOtherTools(ctx, cred.ID, on)
		if _, remote := b.(*client.Client); remote && errors.Is(err, client.ErrNotFound) {
			// Listed a moment ago: the proxy is older than this verb (or the
			// credential was removed meanwhile).
			return fmt.Errorf("the running proxy does not know %s or this verb; restart it with this subpool, then try again", cred.ID)
		}
		return err
	})
	if err != nil {
		return fail(stderr, "tools", cleanAPIErr(notFoundErr(err, id)))
	}
	name := credName(cred)
	switch {
	case already && on:
		fmt.Fprintf(stdout, "%s is %s and serves every tool already\n", name, daemon.KindWords(cred))
	case already:
		return fail(stderr, "tools", fmt.Errorf("%s is %s: it serves every tool and has no own tool to keep it for", name, daemon.KindWords(cred)))
	case on:
		fmt.Fprintf(stdout, "%s now serves every tool, not only %s\n", name, api.ToolTitle(cred.OwnTool))
		switch cred.Provider {
		case config.Anthropic:
			fmt.Fprintln(stdout, billingWarning+".")
		case config.Google:
			fmt.Fprintln(stdout, googleTermsWarning+".")
		}
	default:
		fmt.Fprintf(stdout, "%s serves %s only again; other tools' requests go to API keys or fallback\n", name, api.ToolTitle(cred.OwnTool))
		if _, cfg, err := homeConfig(*home); err == nil && cfg.Subscriptions.OpensToOthers(cred.ID, cred.Label) {
			fmt.Fprintf(stdout, "but config.toml's [subscriptions] other_tools names it, which still opens it to every tool: take it out there\n")
		}
	}
	return 0
}

func credName(c api.CredentialStatus) string {
	if c.Label != "" && c.Label != c.ID {
		return fmt.Sprintf("%s (%s)", c.ID, c.Label)
	}
	return c.ID
}

// servesWords is the SERVES column of `subpool list`: which tools the
// credential takes requests from.
func servesWords(c api.CredentialStatus) string {
	switch {
	case c.OwnTool == "":
		return "all tools"
	case c.OtherTools:
		return "all tools (opted in)"
	}
	return api.ToolTitle(c.OwnTool)
}
