package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// fetchedEvent is one fetched event as an operator sees it.
type fetchedEvent struct {
	Seq         uint64            `json:"seq"`
	Time        time.Time         `json:"time"`
	Event       string            `json:"event"`
	Collection  string            `json:"collection"`
	ProductType string            `json:"productType"`
	ProductID   string            `json:"productId"`
	ProductName string            `json:"productName"`
	Interest    string            `json:"interest,omitempty"`
	URL         string            `json:"url"`
	Size        int64             `json:"size"`
	Verified    bool              `json:"verified"`
	Checksums   map[string]string `json:"checksums,omitempty"`
	Unverified  string            `json:"unverified,omitempty"`
	// Unchanged: the target held it already, nothing was downloaded.
	Unchanged bool   `json:"unchanged,omitempty"`
	Took      string `json:"took,omitempty"`
	// Mode is "files" for a folder of some of the product's files (Files
	// of them, each verified against the manifest), "archive" for an
	// archive stored although files were asked for; "" an archive.
	Mode  string `json:"mode,omitempty"`
	Files int    `json:"files,omitempty"`
}

// newFetchedList is `fetcher fetched list`.
func newFetchedList(fc *failedCmd) *cobra.Command {
	var since, productType, interest string
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the products the fetcher stored", Args: cobra.NoArgs,
		Long: `Lists the fetched events, oldest first, reading their headers only.

  --since          a time (2026-05-01, 2026-05-01T12:00:00Z) or an age (24h, 90m)
  --product-type   one product type (S2MSI2A): read on the subjects' token
  --interest       the interest the product event came by (its Cdse-Interest
                   header: a fetcher consuming an interest's subjects)`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := sinceTime(since, time.Now())
			if err != nil {
				return err
			}
			cfg, store, done, err := fc.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			filter := cfg.FetchedPrefix + ".>"
			if productType != "" {
				filter = cfg.FetchedPrefix + ".*.*." + productType
			}
			l := []fetchedEvent{}
			oc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, HeadersOnly: true}
			if !from.IsZero() {
				oc.DeliverPolicy, oc.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
			}
			err = store.read(ctx, oc, 500, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
				if ev := fetchedOf(cfg.FetchedPrefix, md.Sequence.Stream, md.Timestamp, m.Subject(), m.Headers()); interest == "" || ev.Interest == interest {
					l = append(l, ev)
				}
				return nil
			})
			if err != nil {
				return cli.Interrupted(ctx, err)
			}
			return fc.out.Print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tEVENT\tTYPE\tPRODUCT\tSIZE\tVERIFIED\tURL")
				for _, f := range l {
					verified := fmt.Sprint(f.Verified)
					if f.Mode == event.FetchModeFiles {
						verified += fmt.Sprintf(" (manifest, %d files)", f.Files)
					}
					if f.Unchanged {
						verified += " (unchanged)"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Seq, f.Time.UTC().Format(time.RFC3339), f.Event, f.ProductType,
						cli.OrDash(f.ProductName), fetch.HumanBytes(float64(f.Size)), verified, f.URL)
				}
				return tw.Flush()
			})
		}}
	cmd.Flags().StringVar(&since, "since", "", "only events stored since this time or for this long (24h)")
	cmd.Flags().StringVar(&productType, "product-type", "", "only this product type")
	cmd.Flags().StringVar(&interest, "interest", "", "only the products that came by this interest")
	return cmd
}

// sinceTime reads --since: an age back from now, or a time (RFC 3339, or
// a date, midnight UTC); "" is the beginning.
func sinceTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, cli.Usagef("--since %q: want a time (2026-05-01, 2026-05-01T12:00:00Z) or an age (24h)", s)
}

// fetchedOf reads a fetched event from its subject and headers (the
// object's, and the product's copied from the product message).
func fetchedOf(prefix string, seq uint64, at time.Time, subject string, h nats.Header) fetchedEvent {
	ev := fetchedEvent{Seq: seq, Time: at, ProductID: h.Get(event.HeaderProductID), ProductName: h.Get(event.HeaderProductName),
		Interest: h.Get(event.HeaderInterest), URL: h.Get(event.HeaderObjectURL), Unverified: h.Get(event.HeaderUnverified),
		Unchanged: h.Get(event.HeaderObjectUnchanged) == "true", Took: h.Get(event.HeaderFetchTook)}
	if tokens := strings.Split(strings.TrimPrefix(subject, prefix+"."), "."); len(tokens) == 3 {
		ev.Event, ev.Collection, ev.ProductType = tokens[0], tokens[1], tokens[2]
	}
	ev.Size, _ = strconv.ParseInt(h.Get(event.HeaderObjectSize), 10, 64)
	for k, v := range h {
		if alg, ok := strings.CutPrefix(k, event.HeaderChecksumPrefix); ok && len(v) > 0 && v[0] != "" {
			if ev.Checksums == nil {
				ev.Checksums = map[string]string{}
			}
			ev.Checksums[strings.ToUpper(alg)] = v[0]
		}
	}
	ev.Mode = h.Get(event.HeaderFetchMode)
	ev.Files, _ = strconv.Atoi(h.Get(event.HeaderFileCount))
	ev.Verified = len(ev.Checksums) > 0 || (ev.Mode == event.FetchModeFiles && h.Get(event.HeaderVerifiedAgainst) != "" && ev.Unverified == "")
	return ev
}
