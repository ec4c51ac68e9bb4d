package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
)

// failedHelp is the failed command's long help.
const failedHelp = `The product events the fetcher gave up (offline, not found, a checksum that
keeps failing, no space left, FETCH_MAX_ATTEMPTS deliveries, a body that is
not a notification), kept with the notification and the reason on
FETCH_STREAM, subjects <FETCH_FAILED_PREFIX>.<collection>.<productType>:

  list     what failed: sequence, time, collection, product type, product,
           reason
  show     the notification of one, exactly as stored (-o json|yaml: with
           its headers and metadata)
  retry    put every failed event (or those named: retry 12 15) back to the
           fetchers, exactly once: each is queued on the product stream
           (NATS_STREAM) on cdse.fetchretry.<NATS_STREAM>.<consumer>.<collection>.<productType>,
           which only the fetcher's consumer takes, so it is fetched within
           FETCH_CONCURRENCY like every product; each one queued is removed
           from the failed events
  drop     remove the failed events named (drop 12 15) for good

list reads the headers only and retry one event at a time, so thousands of
failed events cost the command a few megabytes.

The settings are the fetcher's: the environment and, with --config, its
YAML file (NATS_URL and its credentials, FETCH_STREAM, FETCH_FAILED_PREFIX,
FETCH_CONSUMER, NATS_STREAM), validated as the server validates them: run
the command with the fetcher's environment (kubectl exec into a replica).

Exit codes: 0 ok, 1 error (also: a sequence given is not a failed event),
2 usage.`

// failedCmd is what the failed verbs share: the output flag and the
// settings, and a connection opened from them.
type failedCmd struct {
	getenv     func(string) string
	configFile *string // the root's --config
	out        *cli.Output
}

// newFailed is `fetcher failed list|show|retry|drop`, a file per verb, as
// the receiver's quarantine.
func newFailed(getenv func(string) string, configFile *string) *cobra.Command {
	fc := &failedCmd{getenv: getenv, configFile: configFile}
	f := &cobra.Command{
		Use:   "failed",
		Short: "List, show, retry and drop the product events the fetcher gave up",
		Long:  failedHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want one of list, show SEQ, retry [SEQ...], drop SEQ...")
		},
	}
	fc.out = cli.AddOutputFlag(f)
	f.PersistentPreRunE = func(*cobra.Command, []string) error { return fc.out.Check() }
	f.AddCommand(newFailedList(fc), newFailedShow(fc), newFailedRetry(fc), newFailedDrop(fc))
	return f
}

// open loads and validates the settings it reads the streams with (as
// `fetcher serve` reads them; the target and the catalogue login are not
// needed) and connects.
func (fc *failedCmd) open(cmd *cobra.Command) (fetchconfig.Config, *failedstore.Store, func(), error) {
	cfg, err := loadWith(cmd, fc.getenv, *fc.configFile, fetchconfig.Config.ValidateStreams)
	if err != nil {
		return cfg, nil, nil, err
	}
	o := fetcher.NATSOptions(cfg)
	nc, err := natsconn.ConnectOnce(o, "cdse-fetcher-failed")
	if err != nil {
		return cfg, nil, nil, err
	}
	store, err := failedstore.New(nc, failedstore.Options{Stream: cfg.Stream, FailedPrefix: cfg.FailedPrefix, FetchedPrefix: cfg.FetchedPrefix,
		Who: o.Who(), PermissionHint: fetcher.PermissionHint, Stderr: cmd.ErrOrStderr()})
	if err != nil {
		nc.Close()
		return cfg, nil, nil, err
	}
	return cfg, store, nc.Close, nil
}
