package cli

import (
	"context"
	"fmt"
)

var migrateCommand = &Command{
	Name:    "migrate",
	Usage:   "jobd migrate [--database URL]",
	Summary: "bring the database schema up to date (serve does this too)",
	Run:     runMigrate,
}

func init() { commands = append(commands, migrateCommand) }

func runMigrate(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "migrate")
	database := fs.String("database", defaultDatabase, "postgres://… or sqlite:PATH")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	s, err := openStore(ctx, *database, newLogger(env, "info", "text", urlSecrets(*database)))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintln(env.Stdout, "schema up to date")
	return nil
}
