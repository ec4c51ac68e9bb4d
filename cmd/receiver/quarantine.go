package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/config"
	"github.com/cdse-jetstream/receiver/internal/logging"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
	"github.com/cdse-jetstream/receiver/internal/topology"
)

// quarantineHelp is the quarantine command's long help.
const quarantineHelp = `The bodies the receiver refused (invalid JSON, an invalid notification, ...),
kept verbatim on the quarantine stream:

  list     what is quarantined: sequence, time, source, reason, product id
  show     the body of one, exactly as stored (-o json|yaml: with its metadata)
  replay   validate every quarantined body again with this version and
           publish those that pass onto the product stream, exactly once
           (the dedupe keys are those they would have had); each one
           published is removed from the quarantine

list reads the headers only and replay one body at a time, so a quarantine
of a gigabyte costs the command a few megabytes.

` + commandSettingsHelp

// newQuarantine is `receiver quarantine list|show|replay`.
func newQuarantine(getenv func(string) string) *cobra.Command {
	var configFile string
	q := &cobra.Command{
		Use:   "quarantine",
		Short: "List, show and replay the refused bodies kept on the quarantine stream",
		Long:  quarantineHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want one of list, show SEQ, replay")
		},
	}
	q.PersistentFlags().StringVar(&configFile, "config", getenv("RECEIVER_CONFIG"), "YAML settings file (as for the receiver); the environment is read too")
	out := cli.AddOutputFlag(q)
	q.PersistentPreRunE = func(*cobra.Command, []string) error { return out.Check() }
	// open loads and validates the settings a verb uses, and connects.
	open := func(withRoute bool) (config.Config, *topology.Topology, func(), error) {
		checks := []func(config.Config) error{config.Config.ValidateNATS, config.Config.ValidateStreams, config.Config.ValidateLogging}
		if withRoute {
			checks = append(checks, config.Config.ValidateRoute)
		}
		cfg, err := commandConfig(configFile, getenv, checks...)
		if err != nil {
			return cfg, nil, nil, err
		}
		nc, topo, err := connect(cfg, "cdse-receiver-quarantine")
		if err != nil {
			return cfg, nil, nil, err
		}
		return cfg, topo, nc.Close, nil
	}
	reader := func(topo *topology.Topology) *quarantine.Reader {
		return quarantine.NewReader(topo.JetStream(), topo.QuarantineStream())
	}

	list := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the quarantined bodies", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, topo, done, err := open(false)
			if err != nil {
				return err
			}
			defer done()
			l, err := reader(topo).List(cmd.Context())
			if err != nil {
				return ctxDone(cmd.Context(), err)
			}
			return out.Print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tSOURCE\tREASON\tPRODUCT\tBYTES\tERROR")
				for _, s := range l {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Seq, s.Time.UTC().Format(time.RFC3339), s.Source, s.Reason, orDash(s.ProductID), s.Bytes, cut(s.Error, 80))
				}
				return tw.Flush()
			})
		}}
	show := &cobra.Command{Use: "show SEQ", Short: "Print one body exactly as stored (-o json|yaml: with its metadata)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || seq == 0 {
				return cli.Usagef("SEQ %q is not a sequence number (see quarantine list)", args[0])
			}
			_, topo, done, err := open(false)
			if err != nil {
				return err
			}
			defer done()
			s, err := reader(topo).Get(cmd.Context(), seq)
			if err != nil {
				return ctxDone(cmd.Context(), err)
			}
			// The table is the body itself, byte for byte.
			return out.Print(cmd.OutOrStdout(), struct {
				quarantine.Stored
				Body string `json:"body"`
			}{s, string(s.Body)}, func(w io.Writer) error {
				_, err := w.Write(s.Body)
				return err
			})
		}}
	var dryRun bool
	replay := &cobra.Command{Use: "replay", Short: "Validate every body again and publish those that pass, exactly once", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, topo, done, err := open(true)
			if err != nil {
				return err
			}
			defer done()
			return replayRun(cmd.Context(), cfg, topo, reader(topo), dryRun, out, cmd.OutOrStdout())
		}}
	replay.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be published; publish and remove nothing")
	q.AddCommand(list, show, replay)
	return q
}

func replayRun(ctx context.Context, cfg config.Config, topo *topology.Topology, r *quarantine.Reader, dryRun bool, out *cli.Output, stdout io.Writer) error {
	// A replayed product reaches the interests too.
	route, _, err := cfg.RouteWithInterests(prometheus.NewRegistry(), logging.New(cfg.LogLevel, cfg.LogFormat, io.Discard))
	if err != nil {
		return cli.Usagef("%v", err)
	}
	pub, err := publish.NewPublisher(topo.JetStream().Conn(), publish.PublisherOptions{Stream: topo.ProductStream(), Timeout: cfg.PublishTimeout}, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	sum, err := r.Replay(ctx, pub, quarantine.ReplayOptions{Route: route, MaxBody: cfg.MaxBody, MaxNotifications: cfg.MaxNotifications, DryRun: dryRun})
	if err != nil {
		return ctxDone(ctx, err)
	}
	return out.Print(stdout, sum, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tPRODUCT\tRESULT\tDETAIL")
		for _, it := range sum.Items {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, orDash(it.ProductID), it.Result, cut(it.Detail, 100))
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
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
