// Command receiver turns the catalogue's PUSH notifications into a
// deduplicated NATS JetStream feed. One command line (spf13/cobra, as
// kubectl and helm): the server is the default command (`receiver` and
// `receiver serve` both run it), and the one-shot commands are siblings,
// a file each: quarantine, backfill, trace, version, completion. See README.md
// and docs/configuration.md; `receiver --help` lists every setting.
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

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, newRoot(os.Getenv), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// newRoot is the command tree; getenv reads the environment (tests give
// their own).
func newRoot(getenv func(string) string) *cobra.Command {
	var configFile string
	root := newServe(getenv, "receiver", &configFile)
	root.Short = "CDSE catalogue notifications into NATS JetStream"
	// One --config for the server and every command that reads the
	// settings, as kubectl's --kubeconfig.
	root.PersistentFlags().StringVar(&configFile, "config", getenv("RECEIVER_CONFIG"), "YAML file of settings, keys as the environment names (RECEIVER_CONFIG)")
	serve := newServe(getenv, "serve", &configFile)
	serve.Short = "Run the receiver (what `receiver` alone does)"
	root.AddCommand(serve, newQuarantine(getenv, &configFile), newBackfill(getenv, &configFile), newInterests(getenv), newHtpasswd(), newTrace(getenv, &configFile))
	cli.AddVersion(root)
	return root
}

// commandSettingsHelp ends the help of every one-shot command.
const commandSettingsHelp = `The settings are the receiver's: the environment and, with --config, its
YAML file (NATS_URL and its credentials; with the embedded server, run the
command beside the running receiver, with the same RECEIVER_DATA_DIR, as
with kubectl exec). They are validated as the server would validate them.

Exit codes: 0 ok, 1 error, 2 usage.`
