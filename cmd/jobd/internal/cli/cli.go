// Package cli implements the jobd command line: one file and one Command
// per sub-command. cmd/jobd's main only calls Main, which tests call
// directly.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in production).
	Getenv func(string) string

	// points are where the commands report what their tests wait for.
	points envPoints
	// wrapStore, when set, wraps the store serve opens (a test watches
	// the writes of a serve it runs in a subprocess).
	wrapStore func(store.Store) store.Store
}

// envPoints are where the commands report what their tests wait for
// (observe.Point): inert unless something attaches to them, as the tests
// do (internal/testutil/testsignal).
type envPoints struct {
	// listening reports with the address serve listens on.
	listening observe.Point[string]
}

// Command is one sub-command.
type Command struct {
	Name    string
	Usage   string // e.g. "jobd submit [flags] KIND [ARGS-JSON]"
	Summary string // one line for the command list
	Run     func(ctx context.Context, env *Env, args []string) error
}

// commands is the command table; each cmd_*.go file adds its command in
// an init function (and does nothing else there).
var commands []*Command

// ExitError carries a specific exit code out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// errUsage marks a command-line mistake (exit code 2).
var errUsage = errors.New("usage")

// usageError returns an error for a bad command line.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// Main runs the command named by args[0] and returns the process's exit
// code: 0 on success, 2 for usage errors, 1 for other failures, or the
// code of an *ExitError.
func Main(ctx context.Context, args []string, env *Env) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintf(env.Stdout, "jobd %s\n", buildinfo.Version())
		return 0
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printCommands(env.Stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "jobd: unknown command %q\n\n", args[0])
		printCommands(env.Stderr)
		return 2
	}
	err := cmd.Run(ctx, env, args[1:])
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		if exit.Err != nil {
			fmt.Fprintf(env.Stderr, "jobd %s: %v\n", cmd.Name, exit.Err)
		}
		return exit.Code
	case errors.Is(err, errUsage):
		fmt.Fprintf(env.Stderr, "jobd %s: %v\nusage: %s\n", cmd.Name, err, cmd.Usage)
		return 2
	default:
		fmt.Fprintf(env.Stderr, "jobd %s: %v\n", cmd.Name, err)
		return 1
	}
}

func lookup(name string) *Command {
	for _, c := range commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "jobd — a durable job server\n\nusage: jobd COMMAND [flags]\n\ncommands:")
	sorted := append([]*Command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-9s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "\njobd --version prints the version.")
	fmt.Fprintln(w, "Every flag also reads JOBD_<FLAG> from the environment (--admin-secret: JOBD_ADMIN_SECRET).")
}

// newFlagSet returns a flag set for a command that reports errors instead
// of exiting and prints its usage to env.Stderr.
func newFlagSet(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parseFlags parses args; every flag not given on the command line takes
// JOBD_<NAME> from the environment when set (dashes become underscores).
func parseFlags(fs *flag.FlagSet, env *Env, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError("%v", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		name := EnvName(f.Name)
		if v := env.Getenv(name); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = usageError("%s: %v", name, e)
			}
		}
	})
	return err
}

// EnvName is the environment variable that backs a flag.
func EnvName(flagName string) string {
	return "JOBD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
