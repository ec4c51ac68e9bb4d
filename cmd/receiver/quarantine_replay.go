package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// newQuarantineReplay is `receiver quarantine replay [SEQ...]`.
func newQuarantineReplay(qc *quarantineCmd) *cobra.Command {
	var dryRun bool
	replay := &cobra.Command{Use: "replay [SEQ...]", Short: "Validate the bodies again (every one, or those named) and publish those that pass, exactly once",
		RunE: func(cmd *cobra.Command, args []string) error {
			only, err := cli.Seqs(args, "quarantine list")
			if err != nil {
				return err
			}
			cfg, topo, done, err := qc.open(true)
			if err != nil {
				return err
			}
			defer done()
			return replayRun(cmd.Context(), cfg, topo, quarantineReader(topo), only, dryRun, qc.out, cmd.OutOrStdout())
		}}
	replay.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be published; publish and remove nothing")
	return replay
}

func replayRun(ctx context.Context, cfg config.Config, topo *topology.Topology, r *quarantine.Reader, only []uint64, dryRun bool, out *cli.Output, stdout io.Writer) error {
	// A replayed product reaches the interests too.
	route, _, err := wiring.RouteWithInterests(cfg, prometheus.NewRegistry(), cfg.Logger(io.Discard))
	if err != nil {
		return cli.Usagef("%v", err)
	}
	pub, err := wiring.Publisher(topo.JetStream().Conn(), cfg, prometheus.NewRegistry(), false)
	if err != nil {
		return err
	}
	sum, err := r.Replay(ctx, pub, quarantine.ReplayOptions{Route: route, MaxBody: cfg.MaxBody, MaxNotifications: cfg.MaxNotifications, DryRun: dryRun, Seqs: only})
	if err != nil {
		return cli.Interrupted(ctx, err)
	}
	perr := out.Print(stdout, sum, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tPRODUCT\tRESULT\tDETAIL")
		for _, it := range sum.Items {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, cli.OrDash(it.ProductID), it.Result, cli.Cut(it.Detail, 100))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		done := "replayed"
		if dryRun {
			done = "would replay (dry run)"
		}
		_, err := fmt.Fprintf(w, "%d checked: %s %d (%d stored, %d already on the stream), %d still refused\n",
			sum.Checked, done, sum.Replayed, sum.Stored, sum.Duplicates, sum.StillRefused)
		return err
	})
	return errors.Join(perr, cli.NotFound(sum.NotFound, "not in the quarantine (see quarantine list)"))
}
