package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest/backfill"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
)

// backfillHelp is the backfill command's long help.
const backfillHelp = `Publishes a synthesized notification for every product the catalogue
created, modified or deleted in [--since, --until) that matches --filter,
exactly once: what the stream already holds is not published again, even
beyond its duplicate window. Killed and started again with the same
arguments, it continues where it stopped. Needs the catalogue login
(CDSE_USERNAME, CDSE_PASSWORD or CDSE_PASSWORD_FILE) and the receiver's NATS
settings.

With --interest NAME (an interest of INTERESTS_FILE), it gives that one
interest its past: it lists the catalogue with the interest's filter and
events (unless --filter or --events say otherwise) and stores, exactly once,
the copies on the interest's subjects that it lacks, also of products the
product stream already holds. It stores no product message and no other
interest's copy; a product goes to the interest only if the interest's own
filter takes it, whatever --filter listed.

` + commandSettingsHelp

// backfillOptions are the backfill command's flags.
type backfillOptions struct {
	config                       *string // the root's --config
	filter, since, until, events string
	interest                     string
	out                          *cli.Output // -o, checked before the run
	dryRun                       bool
	eventsSet                    bool // --events given, not its default
	pageSize                     int
	rate                         float64
}

// newBackfill is `receiver backfill`.
func newBackfill(getenv func(string) string, configFile *string) *cobra.Command {
	o := backfillOptions{config: configFile}
	b := &cobra.Command{
		Use:   "backfill --filter FILTER --since TIME",
		Short: "Publish a past range of the catalogue, exactly once",
		Long:  backfillHelp,
		Example: `  receiver backfill --filter "Collection/Name eq 'SENTINEL-2'" --since 2026-11-01T00:00:00Z --until 2026-11-08T00:00:00Z
  receiver backfill --filter "Collection/Name eq 'SENTINEL-1'" --since 2026-11-20T00:00:00Z --events deleted --dry-run -o json
  INTERESTS_FILE=interests.yaml receiver backfill --interest s1-grd --since 2026-11-01T00:00:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.eventsSet = cmd.Flags().Changed("events")
			return backfillRun(cmd.Context(), o, getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.flags(b.Flags())
	o.out = cli.AddOutputFlag(b)
	b.PersistentPreRunE = func(*cobra.Command, []string) error { return o.out.Check() }
	return b
}

func (o *backfillOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.filter, "filter", "", "OData filter of the products, e.g. \"Collection/Name eq 'SENTINEL-2'\" (required without INTERESTS_FILE, whose union is the default)")
	fs.StringVar(&o.since, "since", "", "start of the range, RFC 3339 (required), e.g. 2026-11-01T00:00:00Z")
	fs.StringVar(&o.until, "until", "", "end of the range, RFC 3339, exclusive (default: now)")
	fs.StringVar(&o.events, "events", "created,modified,deleted", "events to backfill (with --interest: the interest's events)")
	fs.StringVar(&o.interest, "interest", "", "store only this interest's copies (INTERESTS_FILE), its filter the default --filter")
	fs.BoolVar(&o.dryRun, "dry-run", false, "count what would be published; publish nothing")
	fs.IntVar(&o.pageSize, "page-size", 0, "products per catalogue request, at most 1000 (default RECONCILE_PAGE_SIZE)")
	fs.Float64Var(&o.rate, "rate", 2, "catalogue requests per second, at most")
}

// backfillRun runs a backfill.
func backfillRun(ctx context.Context, o backfillOptions, getenv func(string) string, stdout, stderr io.Writer) error {
	var problems []string
	from, err := time.Parse(time.RFC3339Nano, o.since)
	if err != nil {
		problems = append(problems, fmt.Sprintf("--since %q is not an RFC 3339 time", o.since))
	}
	var to time.Time
	if o.until != "" {
		if to, err = time.Parse(time.RFC3339Nano, o.until); err != nil {
			problems = append(problems, fmt.Sprintf("--until %q is not an RFC 3339 time", o.until))
		} else if !to.After(from) {
			problems = append(problems, "--until must be after --since")
		}
	}
	evs, err := event.ParseKinds(o.events)
	if err != nil {
		problems = append(problems, "--events: "+err.Error())
	}
	if o.pageSize < 0 || o.pageSize > 1000 || o.rate <= 0 {
		problems = append(problems, "--page-size must be between 1 and 1000 and --rate positive")
	}
	if len(problems) > 0 {
		return cli.Usagef("%s", strings.Join(problems, "; "))
	}
	cfg, err := commandConfig(*o.config, getenv, config.Config.ValidateNATS, config.Config.ValidateStreams,
		config.Config.ValidateRoute, config.Config.ValidateCatalogueLogin, config.Config.ValidateLogging)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	// What the backfill stores reaches the interests too.
	route, interests, err := wiring.RouteWithInterests(cfg, prometheus.NewRegistry(), log)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	var one *interestfile.Interest
	if o.interest != "" {
		if one, err = interestNamed(o.interest, cfg.InterestsFile, interests); err != nil {
			return err
		}
		if strings.TrimSpace(o.filter) == "" {
			o.filter = one.Filter.String()
		}
		if !o.eventsSet {
			evs = one.Events
		}
	}
	if strings.TrimSpace(o.filter) == "" {
		// RECONCILE_FILTER, else the interests' union, as the reconciler's.
		o.filter = wiring.ListingFilter(cfg, interests)
		if strings.TrimSpace(o.filter) == "" {
			return cli.Usagef("--filter is required without INTERESTS_FILE (an empty filter would list the whole catalogue)")
		}
	}
	if o.pageSize == 0 {
		o.pageSize = cfg.ReconcilePageSize
	}

	nc, topo, err := wiring.Connect(cfg, "cdse-receiver-backfill")
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := topo.EnsureProduct(ctx); err != nil {
		return cli.Interrupted(ctx, err)
	}
	reg := prometheus.NewRegistry()
	qu, err := wiring.Quarantine(topo, cfg, reg, log)
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := qu.Ensure(ctx); err != nil {
			return cli.Interrupted(ctx, err)
		}
	}
	pub, err := wiring.Publisher(nc, cfg, reg, false)
	if err != nil {
		return err
	}
	api := wiring.Catalogue(cfg)
	var versions jetstream.KeyValue
	if one != nil && one.Latest() {
		// What the receiver's versions consumer decided: a product it
		// would not copy, on the bucket as it stands, gets no copy.
		versions, err = topo.JetStream().KeyValue(ctx, topo.VersionsBucket())
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound):
			log.WithField("bucket", topo.VersionsBucket()).Warn("no versions bucket: the receiver's versions consumer has not run on this stream, so no product is known superseded; every product the interest takes is copied")
		case err != nil:
			return cli.Interrupted(ctx, fmt.Errorf("versions bucket %s: %w", topo.VersionsBucket(), err))
		}
	}
	bf := backfill.New(backfill.Options{Filter: o.filter, Since: from, Until: to, Events: evs, Route: route, DryRun: o.dryRun, Interest: one, Versions: versions},
		catalogclient.NewLister(api, o.pageSize, o.rate), pub, qu, topo, log)

	tty := o.out.Format == "table" && isTerminal(stderr)
	began := map[string]time.Time{}
	bf.OnPage = func(p backfill.Progress) {
		if !tty {
			log.WithField("event", p.Event).WithField("listed", p.Listed).WithField("total", p.Total).
				WithField("published", p.Published).WithField("on_stream", p.OnStream).Info("backfill page stored")
			return
		}
		fmt.Fprintf(stderr, "\r%s", progressLine(p, began))
	}
	log.WithField("since", from.Format(time.RFC3339)).WithField("until", o.until).WithField("dry_run", o.dryRun).Info("backfill started")
	runStart := time.Now()
	sum, err := bf.Run(ctx)
	if tty {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return cli.Interrupted(ctx, fmt.Errorf("%w (run the same command again to continue)", err))
	}
	if one != nil && !o.dryRun {
		if to.IsZero() {
			to = runStart // the listing reached now
		}
		backfill.ExtendComplete(ctx, topo, one, o.filter, sum, from, to, log)
	}
	return o.out.Print(stdout, sum, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		verb := "PUBLISHED"
		if sum.DryRun {
			verb = "WOULD-PUBLISH"
		}
		switch {
		case one != nil && one.Latest():
			// The interest takes the latest versions only: what the
			// versions bucket knows superseded is skipped, and said.
			fmt.Fprintf(tw, "EVENT\tLISTED\t%s\tON-INTEREST\tNOT-TAKEN\tSUPERSEDED\tQUARANTINED\tUNCHANGED\n", verb)
			for _, p := range sum.Events {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Event, p.Listed, p.Published, p.OnStream, p.NotTaken, p.Superseded, p.Quarantined, p.Unchanged)
			}
		case sum.Interest != "":
			fmt.Fprintf(tw, "EVENT\tLISTED\t%s\tON-INTEREST\tNOT-TAKEN\tQUARANTINED\tUNCHANGED\n", verb)
			for _, p := range sum.Events {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Event, p.Listed, p.Published, p.OnStream, p.NotTaken, p.Quarantined, p.Unchanged)
			}
		default:
			fmt.Fprintf(tw, "EVENT\tLISTED\t%s\tON-STREAM\tQUARANTINED\tUNCHANGED\n", verb)
			for _, p := range sum.Events {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", p.Event, p.Listed, p.Published, p.OnStream, p.Quarantined, p.Unchanged)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d ids read from the stream; resumed: %v; took %s\n", sum.Scanned, sum.Resumed, sum.Took)
		return err
	})
}

// interestNamed is the interest of INTERESTS_FILE called name; an
// unknown name, or no file, is a usage error that names the known ones.
func interestNamed(name, file string, r *interest.Router) (*interestfile.Interest, error) {
	if r == nil {
		return nil, cli.Usagef("--interest %q needs INTERESTS_FILE, the file that names it", name)
	}
	set := r.Current()
	var known []string
	for i := range set.Interests {
		if set.Interests[i].Name == name {
			return &set.Interests[i], nil
		}
		known = append(known, set.Interests[i].Name)
	}
	return nil, cli.Usagef("--interest %q is not an interest of %s; its interests: %s", name, file, strings.Join(known, ", "))
}

// progressLine is "created  1200/3000  40%  520/s  ETA 3s".
func progressLine(p backfill.Progress, began map[string]time.Time) string {
	ev := string(p.Event)
	if _, ok := began[ev]; !ok {
		began[ev] = time.Now()
	}
	elapsed := time.Since(began[ev]).Seconds()
	rate := float64(p.Listed) / max(elapsed, 0.001)
	if p.Total <= 0 {
		return fmt.Sprintf("%-9s %d listed  %.0f/s   ", ev, p.Listed, rate)
	}
	eta := time.Duration(float64(p.Total-p.Listed)/max(rate, 0.001)) * time.Second
	return fmt.Sprintf("%-9s %d/%d  %3.0f%%  %.0f/s  ETA %s   ", ev, p.Listed, p.Total, 100*float64(p.Listed)/float64(p.Total), rate, eta.Round(time.Second))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
