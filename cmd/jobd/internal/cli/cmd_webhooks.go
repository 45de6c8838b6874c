package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/webhook"
)

var webhooksCommand = &Command{
	Name: "webhooks",
	Usage: "jobd webhooks [flags] [list]\n" +
		"       jobd webhooks [flags] add --url URL --events job.failed,queue.backlog [--secret whsec_…] [--queue Q] [--kind K]\n" +
		"       jobd webhooks [flags] delete WEBHOOK-ID\n" +
		"       jobd webhooks [flags] test WEBHOOK-ID\n" +
		"       jobd webhooks callback-secret [--database URL]",
	Summary: "manage alert subscriptions (needs an admin key); print the callback secret (reads the database)",
	Run:     runWebhooks,
}

func init() { commands = append(commands, webhooksCommand) }

func runWebhooks(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "webhooks")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	sub, rest := "list", fs.Args()
	if len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", usageError("webhooks %s wants one WEBHOOK-ID", sub)
		}
		return rest[0], nil
	}
	switch sub {
	case "list":
		if len(rest) > 0 {
			return usageError("webhooks list takes no argument")
		}
		return listWebhooks(ctx, env, &cf)
	case "add":
		return addWebhook(ctx, env, &cf, rest)
	case "delete":
		id, err := one()
		if err != nil {
			return err
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		if err := c.DeleteWebhook(ctx, id); err != nil {
			return err
		}
		if !cf.json {
			fmt.Fprintf(env.Stdout, "webhook %s deleted\n", id)
		}
		return nil
	case "test":
		id, err := one()
		if err != nil {
			return err
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		delivery, err := c.TestWebhook(ctx, id)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(env.Stdout, api.WebhookTest{DeliveryID: delivery})
		}
		fmt.Fprintf(env.Stdout, "ping queued: delivery %s (jobd status %s shows its attempts)\n", delivery, delivery)
		return nil
	case "callback-secret":
		return printCallbackSecret(ctx, env, rest)
	default:
		return usageError("unknown webhooks command %q: want list, add, delete, test or callback-secret", sub)
	}
}

func listWebhooks(ctx context.Context, env *Env, cf *clientFlags) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	hooks, err := c.ListWebhooks(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, api.WebhookList{Webhooks: hooks})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tFILTER\tOWNER")
	for _, h := range hooks {
		owner := "api"
		if h.Config {
			owner = "config"
		}
		filter := "-"
		if h.Filter.Queue != "" || h.Filter.Kind != "" {
			filter = "queue=" + h.Filter.Queue + " kind=" + h.Filter.Kind
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.ID, h.URL, strings.Join(h.Events, ","), filter, owner)
	}
	return tw.Flush()
}

func addWebhook(ctx context.Context, env *Env, cf *clientFlags, args []string) error {
	fs := newFlagSet(env, "webhooks add")
	u := fs.String("url", "", "where the alerts are POSTed (required)")
	events := fs.String("events", "", "comma-separated alert types (required): "+strings.Join(api.AlertEvents, ", "))
	secret := fs.String("secret", "", "signing secret whsec_<base64>; default a new one, printed once")
	queue := fs.String("queue", "", "only the alerts of this queue")
	kind := fs.String("kind", "", "only the alerts of this kind")
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if *u == "" || *events == "" {
		return usageError("webhooks add needs --url and --events")
	}
	var list []string
	for _, e := range strings.Split(*events, ",") {
		if e = strings.TrimSpace(e); e != "" {
			list = append(list, e)
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	w, err := c.CreateWebhook(ctx, api.WebhookRequest{URL: *u, Events: list, Secret: *secret,
		Filter: api.WebhookFilter{Queue: *queue, Kind: *kind}})
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, w)
	}
	fmt.Fprintf(env.Stdout, "webhook %s created for %s\n", w.ID, strings.Join(w.Events, ","))
	fmt.Fprintf(env.Stdout, "%s\n", w.Secret)
	fmt.Fprintln(env.Stderr, "Store this secret now: it is not shown again. Receivers verify each delivery's webhook-signature with it.")
	return nil
}

// printCallbackSecret prints the secret the server signs callbacks with:
// the one kept in the database (made now if no server made it yet). A
// server given --callback-secret signs with that one instead.
func printCallbackSecret(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "webhooks callback-secret")
	database := fs.String("database", defaultDatabase, "postgres://… or sqlite:PATH")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	st, err := openStore(ctx, *database, newLogger(env, "info", "text", urlSecrets(*database)))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	secret, err := webhook.CallbackSecret(ctx, st, "")
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, secret)
	if env.Getenv("JOBD_CALLBACK_SECRET") != "" {
		fmt.Fprintln(env.Stderr, "JOBD_CALLBACK_SECRET is set: a server started with it signs with that secret, not this one.")
	}
	return nil
}
