package receiver

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
)

// HeaderReplayed marks a message published by a quarantine replay; its
// value is the body's sequence in the quarantine.
const HeaderReplayed = "Cdse-Replayed"

// quarantineHelp is the quarantine command's long help.
const quarantineHelp = `The bodies the receiver refused (invalid JSON, an invalid notification, ...),
kept verbatim on the quarantine stream:

  list     what is quarantined: sequence, time, source, reason, product id
  show     the body of one, exactly as stored (-o json|yaml: with its metadata)
  replay   validate every quarantined body again with this version and
           publish those that pass onto the product stream, exactly once
           (the dedupe keys are those they would have had); each one
           published is removed from the quarantine

` + commandSettingsHelp

// quarantineOptions are the quarantine command's flags.
type quarantineOptions struct {
	config string
	out    *cli.Output // -o, checked before the run
	dryRun bool
}

// quarantineRun runs one quarantine verb (list, show, replay).
func quarantineRun(ctx context.Context, o quarantineOptions, verb string, seq uint64, getenv func(string) string, stdout io.Writer) error {
	cfg, err := commandConfig(o.config, getenv)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	nc, js, err := connectCommand(cfg, "cdse-receiver-quarantine")
	if err != nil {
		return err
	}
	defer nc.Close()
	r := quarantine.NewReader(js, cfg.QuarantineStream)
	switch verb {
	case "list":
		list, err := r.List(ctx)
		if err != nil {
			return ctxDone(ctx, err)
		}
		return o.out.Print(stdout, nonNil(list), func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tSOURCE\tREASON\tPRODUCT\tBYTES\tERROR")
			for _, s := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Seq, s.Time.UTC().Format(time.RFC3339), s.Source, s.Reason, orDash(s.ProductID), s.Bytes, cut(s.Error, 80))
			}
			return tw.Flush()
		})
	case "show":
		s, err := r.Get(ctx, seq)
		if err != nil {
			return ctxDone(ctx, err)
		}
		// The table is the body itself, byte for byte.
		return o.out.Print(stdout, struct {
			quarantine.Stored
			Body string `json:"body"`
		}{s, string(s.Body)}, func(w io.Writer) error {
			_, err := w.Write(s.Body)
			return err
		})
	}
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: cfg.Stream, Timeout: cfg.PublishTimeout}, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	sum, err := replay(ctx, r, pub, cfg, o.dryRun)
	if err != nil {
		return ctxDone(ctx, err)
	}
	return o.out.Print(stdout, sum, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tPRODUCT\tRESULT\tDETAIL")
		for _, it := range sum.Items {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Seq, orDash(it.ProductID), it.Result, cut(it.Detail, 100))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		done := "replayed"
		if o.dryRun {
			done = "would replay (dry run)"
		}
		_, err := fmt.Fprintf(w, "%d checked: %s %d (%d stored, %d already on the stream), %d still refused\n",
			sum.Checked, done, sum.Replayed, sum.Stored, sum.Duplicates, sum.StillRefused)
		return err
	})
}

// ReplaySummary is what a replay did.
type ReplaySummary struct {
	DryRun       bool         `json:"dryRun"`
	Checked      int          `json:"checked"`
	Replayed     int          `json:"replayed"`   // bodies that pass now (removed from the quarantine unless dry)
	Stored       int          `json:"stored"`     // notifications newly stored
	Duplicates   int          `json:"duplicates"` // already on the stream (another source brought them)
	StillRefused int          `json:"stillRefused"`
	Items        []ReplayItem `json:"items"`
}

// ReplayItem is the fate of one quarantined body.
type ReplayItem struct {
	Seq       uint64 `json:"seq"`
	ProductID string `json:"productId,omitempty"`
	Result    string `json:"result"` // replayed, would-replay, refused
	Detail    string `json:"detail,omitempty"`
}

// replay validates every quarantined body with this version's validator
// and publishes those that pass, as their source would have: same subject,
// headers and dedupe key, so a product that reached the stream meanwhile
// (through the reconciler, say) is a duplicate, not a second message. A
// body is removed from the quarantine only after its PubAck.
func replay(ctx context.Context, r *quarantine.Reader, pub *publish.Publisher, cfg Config, dryRun bool) (ReplaySummary, error) {
	sum := ReplaySummary{DryRun: dryRun, Items: []ReplayItem{}}
	route := cfg.route()
	list, err := r.List(ctx)
	if err != nil {
		return sum, err
	}
	for _, s := range list {
		sum.Checked++
		item := ReplayItem{Seq: s.Seq, ProductID: s.ProductID}
		body, err := s.Decoded(cfg.MaxBody)
		var ns []notification.Notification
		if err == nil {
			ns, err = notification.Parse(body, cfg.MaxNotifications)
		}
		if err != nil {
			sum.StillRefused++
			item.Result, item.Detail = "refused", err.Error()
			sum.Items = append(sum.Items, item)
			continue
		}
		sum.Replayed++
		if dryRun {
			item.Result, item.Detail = "would-replay", fmt.Sprintf("%d notification(s)", len(ns))
			sum.Items = append(sum.Items, item)
			continue
		}
		source := s.Source
		if source == "" {
			source = ingest.SourcePush
		}
		msgs := ingest.Messages(ns, &route, source)
		for i := range msgs {
			msgs[i].MessageHeader()[HeaderReplayed] = []string{strconv.FormatUint(s.Seq, 10)}
		}
		res, err := pub.Publish(ctx, msgs)
		if err != nil {
			return sum, fmt.Errorf("replay quarantined body %d (left in the quarantine): %w", s.Seq, err)
		}
		o := ingest.Count(res)
		sum.Stored, sum.Duplicates = sum.Stored+o.Accepted, sum.Duplicates+o.Duplicates
		if err := r.Remove(ctx, s.Seq); err != nil {
			return sum, fmt.Errorf("replayed body %d is stored, but %w; a second replay finds it a duplicate", s.Seq, err)
		}
		item.Result, item.Detail = "replayed", fmt.Sprintf("%d stored, %d duplicate", o.Accepted, o.Duplicates)
		sum.Items = append(sum.Items, item)
	}
	return sum, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
