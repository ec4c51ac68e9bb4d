package receiver

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/backfill"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
	"github.com/cdse-jetstream/receiver/internal/reconcile"
)

// backfillHelp is the backfill command's long help.
const backfillHelp = `Publishes a synthesized notification for every product the catalogue
created, modified or deleted in [--since, --until) that matches --filter,
exactly once: what the stream already holds is not published again, even
beyond its duplicate window. Killed and started again with the same
arguments, it continues where it stopped. Needs the catalogue login
(CDSE_USERNAME, CDSE_PASSWORD or CDSE_PASSWORD_FILE) and the receiver's NATS
settings.

` + commandSettingsHelp

// backfillOptions are the backfill command's flags.
type backfillOptions struct {
	config, filter, since, until, events string
	out                                  *cli.Output // -o, checked before the run
	dryRun                               bool
	pageSize                             int
	rate                                 float64
}

func (o *backfillOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.filter, "filter", "", "OData filter of the products (required), e.g. \"Collection/Name eq 'SENTINEL-2'\"")
	fs.StringVar(&o.since, "since", "", "start of the range, RFC 3339 (required), e.g. 2026-11-01T00:00:00Z")
	fs.StringVar(&o.until, "until", "", "end of the range, RFC 3339, exclusive (default: now)")
	fs.StringVar(&o.events, "events", "created,modified,deleted", "events to backfill")
	fs.BoolVar(&o.dryRun, "dry-run", false, "count what would be published; publish nothing")
	fs.IntVar(&o.pageSize, "page-size", 0, "products per catalogue request, at most 1000 (default RECONCILE_PAGE_SIZE)")
	fs.Float64Var(&o.rate, "rate", 2, "catalogue requests per second, at most")
}

// backfillRun runs a backfill.
func backfillRun(ctx context.Context, o backfillOptions, getenv func(string) string, stdout, stderr io.Writer) error {
	var problems []string
	if strings.TrimSpace(o.filter) == "" {
		problems = append(problems, "--filter is required (an empty filter would list the whole catalogue)")
	}
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
	evs, err := reconcile.ParseEvents(o.events)
	if err != nil {
		problems = append(problems, "--events: "+err.Error())
	}
	if o.pageSize < 0 || o.pageSize > 1000 || o.rate <= 0 {
		problems = append(problems, "--page-size must be between 1 and 1000 and --rate positive")
	}
	cfg, err := commandConfig(o.config, getenv)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if cfg.CDSEUsername == "" || cfg.CDSEPassword == "" {
		problems = append(problems, "the catalogue login is needed: CDSE_USERNAME and CDSE_PASSWORD (or CDSE_PASSWORD_FILE)")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(problems, "; "))
	}
	if o.pageSize == 0 {
		o.pageSize = cfg.ReconcilePageSize
	}

	log := NewLogger(cfg, stderr)
	nc, js, err := connectCommand(cfg, "cdse-receiver-backfill")
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := publish.EnsureStream(ctx, js, cfg.streamOptions()); err != nil {
		return ctxDone(ctx, err)
	}
	reg := prometheus.NewRegistry()
	qu, err := quarantine.New(js, cfg.quarantineOptions(), reg, log)
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := qu.Ensure(ctx); err != nil {
			return ctxDone(ctx, err)
		}
	}
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: cfg.Stream, Timeout: cfg.PublishTimeout}, reg)
	if err != nil {
		return err
	}
	tokens := auth.NewPasswordSource(auth.PasswordConfig{TokenURL: cfg.CDSETokenURL, ClientID: cfg.CDSEClientID,
		Username: cfg.CDSEUsername, Password: cfg.CDSEPassword, TOTP: cfg.CDSETOTP})
	api := catalogclient.New(cfg.CDSECatalogueURL, tokens, nil)
	bf := backfill.New(backfill.Options{Filter: o.filter, Since: from, Until: to, Events: evs, Route: cfg.route(),
		Stream: cfg.Stream, Bucket: cfg.Stream + "_STATE", Replicas: cfg.StreamReplicas, DryRun: o.dryRun},
		reconcile.NewLister(api, o.pageSize, o.rate), pub, qu, js, log)

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
	sum, err := bf.Run(ctx)
	if tty {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return ctxDone(ctx, fmt.Errorf("%w (run the same command again to continue)", err))
	}
	return o.out.Print(stdout, sum, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		verb := "PUBLISHED"
		if sum.DryRun {
			verb = "WOULD-PUBLISH"
		}
		fmt.Fprintf(tw, "EVENT\tLISTED\t%s\tON-STREAM\tQUARANTINED\tUNCHANGED\n", verb)
		for _, p := range sum.Events {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", p.Event, p.Listed, p.Published, p.OnStream, p.Quarantined, p.Unchanged)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d ids read from the stream; resumed: %v; took %s\n", sum.Scanned, sum.Resumed, sum.Took)
		return err
	})
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
