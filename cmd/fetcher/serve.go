package main

import (
	"context"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/platform/redact"
	"github.com/cdse-jetstream/receiver/internal/platform/run"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

// newServe is the server's command, named use ("fetcher" at the root,
// "serve" below it); now, closed, cuts a shutdown's running downloads.
func newServe(getenv func(string) string, use string, configFile *string, now <-chan struct{}) *cobra.Command {
	cmd := &cobra.Command{
		Use: use,
		Long: `Consumes the receiver's product stream (one durable consumer, shared by every
replica; FETCH_CONCURRENCY downloads at once across them), stores each
product in FETCH_TARGET, verified, and publishes a fetched event for it
(or, given up, a failed one) on FETCH_STREAM.

` + settingsHelp,
		Args: cobra.NoArgs,
	}
	fetchconfig.BindFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load(cmd, getenv, *configFile)
		if err != nil {
			return err
		}
		byInterest, err := interestFiles(cfg)
		if err != nil {
			return err
		}
		return serve(cmd.Context(), cfg, byInterest, getenv, cmd, now)
	}
	return cmd
}

// serve runs the fetcher until ctx ends (the first SIGTERM or SIGINT; a
// second closes now) or it fails: the project's start-up shape
// (internal/platform/run); the fetcher bounds its own shutdown
// (FETCH_SHUTDOWN_TIMEOUT).
func serve(ctx context.Context, cfg fetchconfig.Config, byInterest map[string][]string, getenv func(string) string, cmd *cobra.Command, now <-chan struct{}) error {
	log, flush := cfg.BatchedLogger(cmd.OutOrStdout())
	defer flush()
	// The receiver's list knows the fetcher's variables (and the
	// receiver's): one environment file may serve both.
	o := run.Options{Name: "fetcher", Log: log, Unknown: config.UnknownEnv(os.Environ())}
	return run.Serve(ctx, o, func() (func(context.Context) error, error) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		parts, err := fetcher.Build(ctx, cfg, getenv, reg, log)
		if err != nil {
			return nil, err
		}
		parts.Files.ByInterest = byInterest
		if len(parts.Files.Default) > 0 || len(byInterest) > 0 {
			log.WithFields(map[string]any{"files": parts.Files.Default, "interests_with_files": len(byInterest)}).Info("only the files selected of each product are fetched (FETCH_FILES, the interests' files:)")
		}
		return func(ctx context.Context) error {
			// New only registers metrics: its error is returned, not
			// logged as a failed start (as the fetcher always did).
			a, err := fetcher.New(cfg, parts, reg, log)
			if err != nil {
				return err
			}
			a.StopNowOn(now)
			log.WithFields(map[string]any{"target": redact.URLs(cfg.Target), "consumer": cfg.FetchConsumer, "subjects": cfg.SubjectList(),
				"concurrency": cfg.Concurrency, "admin": cfg.AdminAddr}).Info("fetcher starting")
			if err := a.Run(ctx); err != nil {
				log.WithError(err).Error("fetcher failed")
				return err
			}
			log.Info("stopped")
			return nil
		}, nil
	})
}

// interestFiles reads the files: lists of INTERESTS_FILE, by interest
// (nil without the setting): the receiver's file, checked as the
// receiver checks it, so that one file serves both. A broken file is a
// configuration error. It is read at start: a change needs a restart.
func interestFiles(cfg fetchconfig.Config) (map[string][]string, error) {
	if cfg.InterestsFile == "" {
		return nil, nil
	}
	set, err := interestfile.Load(cfg.InterestsFile)
	if err != nil {
		return nil, cli.Usagef("invalid configuration:\nINTERESTS_FILE: %v", err)
	}
	out := map[string][]string{}
	for _, in := range set.Interests {
		if len(in.Files) > 0 {
			out[in.Name] = in.Files
		}
	}
	return out, nil
}
