package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/platform/run"
	"github.com/cdse-jetstream/receiver/internal/platform/settings"
	"github.com/cdse-jetstream/receiver/internal/receiver/app"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

// serveHelp is the server's long help; the flags' list follows it.
var serveHelp = `Receives the catalogue's PUSH notifications over HTTPS (Basic auth), and
optionally reads a PULL subscription and reconciles the catalogue's listing,
and stores each product event once in a NATS JetStream stream.

Every setting is read from, in rising precedence: a YAML file (--config or
RECEIVER_CONFIG; its keys are the environment names), the environment, the
flags. Values are taken as written; an empty one is no value. Each flag
names its environment variable. Secrets have no flag (it would show in ps):
set the variable or <NAME>_FILE (also in the YAML file):
` + secretsList() + `
The whole table: docs/configuration.md.`

func secretsList() string { return settings.SecretsHelp(config.Settings()) }

// newServe is the server's command, named use ("receiver" at the root,
// "serve" below it): the settings' flags and --config.
func newServe(getenv func(string) string, use string, configFile *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:  use,
		Long: serveHelp,
		Args: cobra.NoArgs,
	}
	config.BindFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := run.Settings(func() (config.Config, error) {
			return config.Load(config.Sources{File: *configFile, Getenv: getenv, Flags: cmd.Flags()})
		}, config.Config.Validate, func() string { return config.TypoHints(os.Environ()) })
		if err != nil {
			return err
		}
		return serve(cmd.Context(), cfg, cmd)
	}
	return cmd
}

// serve runs the receiver until ctx ends (SIGTERM, SIGINT) or a listener
// fails, then shuts it down within RECEIVER_SHUTDOWN_TIMEOUT: the
// project's start-up shape (internal/platform/run).
func serve(ctx context.Context, cfg config.Config, cmd *cobra.Command) error {
	log, flush := cfg.BatchedLogger(cmd.OutOrStdout())
	defer flush() // every line is written out before the process exits
	o := run.Options{Name: "receiver", Log: log, Unknown: config.UnknownEnv(os.Environ())}
	return run.Serve(ctx, o, func() (func(context.Context) error, error) {
		a, err := app.New(cfg, log, prometheus.NewRegistry())
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return until(ctx, a, cfg, log) }, nil
	})
}

// until starts the receiver and serves until ctx ends or it fails;
// SIGHUP re-reads the files read while running, as daemons do.
func until(ctx context.Context, a *app.App, cfg config.Config, log logrus.FieldLogger) error {
	if err := a.Start(ctx); err != nil {
		log.WithError(err).Error("receiver failed to start")
		_ = run.Bounded(ctx, cfg.ShutdownTimeout, a.Shutdown)
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var failed error
wait:
	for {
		select {
		case <-hup:
			log.Info("SIGHUP: reloading")
			a.Reload(true)
		case <-ctx.Done():
			log.Info("shutting down")
			break wait
		case failed = <-a.Errors():
			log.WithError(failed).Error("server failed")
			break wait
		}
	}
	if err := run.Bounded(ctx, cfg.ShutdownTimeout, a.Shutdown); err != nil {
		log.WithError(err).Error("shutdown incomplete")
		failed = errors.Join(failed, fmt.Errorf("shutdown incomplete: %w", err))
	}
	log.Info("stopped")
	return failed
}
