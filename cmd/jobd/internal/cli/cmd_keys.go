package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jobd/jobd/api"
)

var keysCommand = &Command{
	Name: "keys",
	Usage: "jobd keys [flags] [list]\n" +
		"       jobd keys [flags] create --name NAME --scopes submit,read,cancel,admin,metrics [--queues video.*,audio]\n" +
		"       jobd keys [flags] revoke KEY-ID",
	Summary: "manage API keys (needs the admin secret or an admin key)",
	Run:     runKeys,
}

func init() { commands = append(commands, keysCommand) }

func runKeys(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "keys")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	sub, rest := "list", fs.Args()
	if len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	switch sub {
	case "list":
		if len(rest) > 0 {
			return usageError("keys list takes no argument")
		}
		return listKeys(ctx, env, &cf)
	case "create":
		return createKey(ctx, env, &cf, rest)
	case "revoke":
		if len(rest) != 1 {
			return usageError("keys revoke wants one KEY-ID")
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		if err := c.RevokeKey(ctx, rest[0]); err != nil {
			return err
		}
		if !cf.json {
			fmt.Fprintf(env.Stdout, "key %s revoked\n", rest[0])
		}
		return nil
	default:
		return usageError("unknown keys command %q: want list, create or revoke", sub)
	}
}

func listKeys(ctx context.Context, env *Env, cf *clientFlags) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	keys, err := c.ListKeys(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, api.KeyList{Keys: keys})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tQUEUES\tCREATED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, strings.Join(k.Scopes, ","), queuesText(k.Queues), formatTime(k.CreatedAt))
	}
	return tw.Flush()
}

func createKey(ctx context.Context, env *Env, cf *clientFlags, args []string) error {
	fs := newFlagSet(env, "keys create")
	name := fs.String("name", "", "the key's name (required)")
	scopes := fs.String("scopes", "", "comma-separated scopes: submit, read, cancel, admin, metrics (admin implies all)")
	queues := fs.String("queues", "", "comma-separated queues the key is limited to: names, and prefixes NAME.* (default: every queue; only for scopes submit, read and cancel)")
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if *name == "" || *scopes == "" {
		return usageError("keys create needs --name and --scopes")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	k, err := c.CreateKeyWith(ctx, api.KeyRequest{Name: *name, Scopes: splitList(*scopes), Queues: splitList(*queues)})
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, k)
	}
	fmt.Fprintf(env.Stdout, "key %s (%s) created with scopes %s, queues %s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), queuesText(k.Queues))
	fmt.Fprintf(env.Stdout, "%s\n", k.Key)
	fmt.Fprintln(env.Stderr, "Store this key now: it is not shown again.")
	return nil
}

// splitList splits a comma-separated flag, dropping blanks.
func splitList(v string) []string {
	var list []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	return list
}

// queuesText shows the queues of a key or a worker: "any" for none.
func queuesText(queues []string) string {
	if len(queues) == 0 {
		return "any"
	}
	return strings.Join(queues, ",")
}
