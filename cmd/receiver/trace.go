package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/trace"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
)

// traceHelp is the trace command's long help.
const traceHelp = `Where one product is, given its id (a UUID) or its name: every message
about it, oldest first, in one table:

  product      its event on the product stream, with the source that brought
               it (push, pull, reconcile, backfill; "replayed from
               quarantine SEQ" when a replay stored it)
  interest     an interest's copy of it (cdse.interest.<name>.…)
  fetchretry   put back for the fetcher by ` + "`fetcher failed retry`" + `
  quarantine   a refused body that names it, with the reason
  fetched      the fetcher stored it (the object's URL), or removed it
  failed       the fetcher gave it up (why)

The fetched and failed events are read from the fetcher's stream
(--fetched-stream, its FETCH_STREAM; none there yet is no error).

Below, its versions: its acquisition (its messages' Cdse-Acquisition, else
computed from its name; "no acquisition" when no naming rule applies),
every version the versions bucket (<NATS_STREAM>_VERSIONS) holds of it,
oldest first, when each place was decided (as a notice tells), which is the
latest and what the product is (latest, superseded by, undecided), and the
notices of supersession naming it (RECEIVER_VERSIONS_SUBJECT_PREFIX.>, read
with the product stream). No bucket (RECEIVER_VERSIONS off) is said, not an
error; the bucket trails the stream by what the versions consumer has yet
to decide.

Each stream is read once, up to its last message when the read began: the
product and fetcher streams by their headers only, the quarantine a few
bodies at a time (a refused body names its product in a header only when
one could be read from it, and never by name), so a stream of any size
costs the command a few megabytes; --timeout bounds the whole search, and
a read that stops early is an error, never a "not found".

The settings are the receiver's: the environment and, with --config, its
YAML file (NATS_URL and its credentials; with the embedded server, run the
command beside the running receiver, with the same RECEIVER_DATA_DIR, as
with kubectl exec). They are validated as the server would validate them.

Exit codes: 0 found, 1 not found (or the search failed or timed out:
what it found until then is printed), 2 usage.`

// newTrace is `receiver trace PRODUCT`.
func newTrace(getenv func(string) string, configFile *string) *cobra.Command {
	var (
		timeout time.Duration
		fetched string
	)
	cmd := &cobra.Command{
		Use:     "trace PRODUCT-ID|PRODUCT-NAME",
		Short:   "Show where one product is: its events, interest copies, quarantined bodies, fetched and failed events",
		Long:    traceHelp,
		Example: "  receiver trace 0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f\n  receiver trace S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE -o json",
		Args:    cobra.ExactArgs(1),
	}
	out := cli.AddOutputFlag(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up the search after this long (what was found is printed, exit 1)")
	cmd.Flags().StringVar(&fetched, "fetched-stream", event.DefaultFetchedStream, `the fetcher's stream (its FETCH_STREAM); "" to leave it out`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := out.Check(); err != nil {
			return err
		}
		q, err := trace.ParseQuery(args[0])
		if err != nil {
			return cli.Usagef("%v", err)
		}
		if timeout <= 0 {
			return cli.Usagef("--timeout %s: want a positive duration", timeout)
		}
		cfg, err := commandConfig(*configFile, getenv, config.Config.ValidateNATS, config.Config.ValidateStreams, config.Config.ValidateLogging)
		if err != nil {
			return err
		}
		nc, topo, err := wiring.Connect(cfg, "cdse-receiver-trace")
		if err != nil {
			return err
		}
		defer nc.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		res, ferr := trace.Find(ctx, topo.JetStream(), trace.Options{
			ProductStream: topo.ProductStream(), QuarantineStream: topo.QuarantineStream(),
			FetchedStream: fetched, MaxBody: cfg.MaxBody, VersionsBucket: topo.VersionsBucket(),
		}, q)
		if ferr != nil && cmd.Context().Err() != nil {
			ferr = cli.Interrupted(cmd.Context(), ferr)
		} else if ferr != nil && ctx.Err() != nil {
			ferr = fmt.Errorf("timed out after %s: %w", timeout, ferr)
		}
		if res.Found() || out.Format == "json" || out.Format == "yaml" {
			if err := out.Print(cmd.OutOrStdout(), res, func(w io.Writer) error { return trace.Table(w, res, out.Wide()) }); err != nil {
				return err
			}
		}
		if ferr != nil {
			return ferr
		}
		if !res.Found() {
			return errors.New("product " + q.String() + ": no message about it on " + readStreams(res))
		}
		return nil
	}
	return cmd
}

// readStreams names the streams a trace read, and those missing.
func readStreams(res trace.Result) string {
	var names []string
	for _, r := range res.Reads {
		if r.Missing {
			names = append(names, r.Stream+" (missing)")
		} else {
			names = append(names, fmt.Sprintf("%s (%d read)", r.Stream, r.Read))
		}
	}
	return strings.Join(names, ", ")
}
