// Command fetcher downloads the products the receiver announces: it
// consumes the product stream with one durable consumer (every replica
// shares it), stores each product in a directory or an S3 bucket,
// verified against the catalogue's checksums, and publishes a fetched (or
// failed) event for each. The server is the default command (`fetcher`
// and `fetcher serve` both run it); `fetcher get <id>` fetches one product
// by hand. See docs/fetching.md; `fetcher --help` lists every setting.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	// CA roots for an image without a system store, as the receiver's.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/platform/run"
	"github.com/cdse-jetstream/receiver/internal/platform/settings"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

func main() {
	ctx, now, stop := stopSignals()
	code := cli.Execute(ctx, newRoot(os.Getenv, now), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopSignals: the first SIGINT or SIGTERM ends ctx, a stop that lets
// running downloads finish (FETCH_SHUTDOWN_TIMEOUT); the second closes
// now, a stop at once. After it the signals have their default effect
// again: a third ends the process whatever it is doing.
func stopSignals() (ctx context.Context, now <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	nowc, quit := make(chan struct{}), make(chan struct{})
	go func() {
		for i := range 2 {
			select {
			case <-sig:
			case <-quit:
				return
			}
			if i == 0 {
				cancel()
			}
		}
		close(nowc)
		signal.Stop(sig)
	}()
	return ctx, nowc, func() { signal.Stop(sig); close(quit); cancel() }
}

// newRoot is the command tree; getenv reads the environment (tests give
// their own); now is closed by a second signal (stopSignals).
func newRoot(getenv func(string) string, now <-chan struct{}) *cobra.Command {
	var configFile string
	root := newServe(getenv, "fetcher", &configFile, now)
	root.Short = "Download the products of the receiver's stream into a directory or S3"
	root.PersistentFlags().StringVar(&configFile, "config", getenv("FETCH_CONFIG"), "YAML file of settings, keys as the environment names (FETCH_CONFIG)")
	serve := newServe(getenv, "serve", &configFile, now)
	serve.Short = "Run the fetcher (what `fetcher` alone does)"
	root.AddCommand(serve, newGet(getenv, &configFile), newFailed(getenv, &configFile), newFetched(getenv, &configFile), newStatus(getenv, &configFile), newStac(getenv, &configFile))
	cli.AddVersion(root)
	return root
}

// settingsHelp ends the long help of the commands that read the settings.
var settingsHelp = `Every setting is read from, in rising precedence: a YAML file (--config or
FETCH_CONFIG; its keys are the environment names), the environment, the
flags. Values are taken as written; an empty one is no value. Each flag
names its environment variable. Secrets have no flag (it would show in ps):
set the variable or <NAME>_FILE (also in the YAML file):
` + secretsList() + `
An S3 target reads the AWS SDK's settings (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3, ...); the
instance's role only with AWS_EC2_METADATA_DISABLED=false.
The whole table: docs/fetching.md.`

func secretsList() string { return settings.SecretsHelp(fetchconfig.Settings()) }

// load reads and validates the settings of cmd.
func load(cmd *cobra.Command, getenv func(string) string, configFile string) (fetchconfig.Config, error) {
	return loadWith(cmd, getenv, configFile, validate)
}

// validate is every problem of the settings at once: fetchconfig's, and
// what FETCH_TARGET's scheme needs (the fetcher's scheme table).
func validate(c fetchconfig.Config) error {
	return errors.Join(c.Validate(), fetcher.CheckTarget(c.Target))
}

// loadWith is load with the validation the command needs.
func loadWith(cmd *cobra.Command, getenv func(string) string, configFile string, validate func(fetchconfig.Config) error) (fetchconfig.Config, error) {
	return run.Settings(func() (fetchconfig.Config, error) {
		return fetchconfig.Load(fetchconfig.Sources{File: configFile, Getenv: getenv, Flags: cmd.Flags()})
	}, validate, func() string { return config.TypoHints(os.Environ()) })
}
