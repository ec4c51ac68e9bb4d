// Command register creates and manages the catalogue subscription that
// feeds the receiver. One cobra root, a file per subcommand; what the
// commands do with the catalogue is internal/register's. See
// `register --help` and README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	// CA roots for an image without a system store (make image builds on
	// an empty base); the system's store wins where there is one.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/register"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, newRoot(os.Getenv), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// deps is what every command is given: the environment, the -o flag, and
// a login made only when a command that needs the catalogue runs (so that
// --help and completion work without credentials).
type deps struct {
	getenv func(string) string
	out    *cli.Output
}

func (d deps) session() (*register.Session, error) { return register.NewSession(d.getenv) }

// printOne writes the one subscription a command made or read, as -o says.
func (d deps) printOne(cmd *cobra.Command, sub *catalogclient.Subscription) error {
	return register.PrintSubscriptions(cmd.OutOrStdout(), d.out, []catalogclient.Subscription{*sub})
}

// newRoot is the command tree; getenv reads the environment (tests give
// their own).
func newRoot(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "register",
		Short: "Create and manage the catalogue subscription that feeds the receiver",
		Long: `register logs in to the CDSE identity provider and manages the account's
catalogue subscriptions: it creates the receiver's subscription (idempotently,
within the account's limits), lists, shows, pauses, resumes and cancels them.

` + register.SettingsHelp,
		Example: `  register create --endpoint https://receiver.example.org/notifications --filter "Collection/Name eq 'SENTINEL-2'" --events created,modified
  register create --type pull --filter "Collection/Name eq 'SENTINEL-1'"
  register list -o json
  register pause 0b4f6b1e-...`,
	}
	d := deps{getenv: getenv, out: cli.AddOutputFlag(root)}
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return d.out.Check() }
	root.AddCommand(newCreate(d), newApply(d), newUpdate(d), newList(d), newWhoami(d), newStatus(d), newDoctor(d),
		newGet(d), newPause(d), newResume(d), newCancel(d))
	cli.AddVersion(root)
	return root
}
