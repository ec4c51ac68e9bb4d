package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchview"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newGet fetches one product by hand: its entity from the catalogue, the
// same engine, target and key as the server's; no event is published.
func newGet(getenv func(string) string, configFile *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get PRODUCT-ID",
		Short: "Fetch one product into FETCH_TARGET by hand",
		Long: `Reads the product's entity from the catalogue and stores the product in
FETCH_TARGET under the key the server would give it, verified the same way.
With --files (FETCH_FILES), only the files of its manifest those path globs
select, into the folder <key without .zip>/, each verified against the
manifest: fetcher get ID --files 'GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2,MTD_MSIL2A.xml'
No event is published and no NATS is needed. On a terminal, stderr shows a
progress bar; elsewhere a line every 2 s (bytes, rate, time left).

` + settingsHelp + `

Exit codes: 0 ok, 1 error, 2 usage.`,
		Args: cobra.ExactArgs(1),
	}
	fetchconfig.BindFlags(cmd.Flags())
	out := cli.AddOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := out.Check(); err != nil {
			return err
		}
		ctx := cmd.Context()
		show, every, done := fetchview.Progress(cmd.ErrOrStderr())
		cfg, parts, err := buildParts(cmd, getenv, *configFile, func(o *fetch.Options) { o.ProgressEvery = every })
		if err != nil {
			return err
		}
		n, err := productEvent(ctx, parts, args[0])
		if err != nil {
			return err
		}
		key := fetcher.Key(cfg.KeyTemplate, n)
		p := fetcher.ProductOf(n)
		p.Files = parts.Files.For("")
		res, err := parts.Engine.Fetch(ctx, p, key, show)
		done()
		if err != nil && ctx.Err() != nil {
			return interrupted(parts.Target, key, args[0], err)
		}
		if err != nil {
			return err
		}
		if _, err := fetcher.StoreItem(ctx, parts.Target, cfg, n, key, res); err != nil {
			return err
		}
		return out.Print(cmd.OutOrStdout(), res, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s\t%d bytes\talready there: %t\n", res.URL, res.Size, res.AlreadyThere)
			if err == nil && res.Files != nil {
				err = printFiles(w, res.Files)
			}
			return err
		})
	}
	return cmd
}

// interrupted is the error of a get cut by Ctrl-C (err): whether a rerun
// resumes, which is what the user weighs before pressing it again.
func interrupted(t target.Target, key, id string, err error) error {
	held, keeps := t.Partial(key)
	switch {
	case !keeps:
		return fmt.Errorf("interrupted (%w): the target keeps no partial download (an S3 multipart upload is aborted): a rerun starts over", err)
	case held == 0:
		return fmt.Errorf("interrupted (%w) before a byte was kept: a rerun starts from the start", err)
	}
	return fmt.Errorf("interrupted (%w): %d bytes kept in the partial file: rerun to resume from byte %d (fetcher get %s)", err, held, held, id)
}

// productEvent is product id's entity read from the catalogue, as a
// created notification's value: the server's decoding (name, length,
// checksums, collection, dates) applies.
func productEvent(ctx context.Context, parts fetcher.Parts, id string) (*event.Notification, error) {
	entity, err := parts.Catalogue.GetProduct(ctx, id)
	if err != nil {
		return nil, err
	}
	note, err := json.Marshal(map[string]any{"SubscriptionEvent": event.Created, "ProductId": id, "value": entity})
	if err != nil {
		return nil, err
	}
	n, err := event.DecodeData(note, nil)
	if err != nil {
		return nil, fmt.Errorf("product %s: %w", id, err)
	}
	return n, nil
}

// buildParts loads and validates the settings of a one-shot verb and
// builds the engine, target and catalogue client from them, logging to
// stderr.
func buildParts(cmd *cobra.Command, getenv func(string) string, configFile string, tune ...func(*fetch.Options)) (fetchconfig.Config, fetcher.Parts, error) {
	cfg, err := load(cmd, getenv, configFile)
	if err != nil {
		return cfg, fetcher.Parts{}, err
	}
	log := cfg.Logger(cmd.ErrOrStderr())
	parts, err := fetcher.Build(cmd.Context(), cfg, getenv, prometheus.NewRegistry(), log, tune...)
	return cfg, parts, err
}

// printFiles says what a fetch by files stored, and what it saved.
func printFiles(w io.Writer, r *fetch.FilesResult) error {
	if r.Fallback != "" {
		_, err := fmt.Fprintf(w, "files %s: %s\n", strings.Join(r.Patterns, ","), r.Fallback)
		return err
	}
	for _, f := range r.Files {
		state := "fetched"
		if f.AlreadyThere {
			state = "already there"
		}
		if _, err := fmt.Fprintf(w, "  %s\t%d bytes\t%s\n", f.Path, f.Size, state); err != nil {
			return err
		}
	}
	saved := ""
	if r.ArchiveSize > 0 {
		saved = fmt.Sprintf(" of the archive's %d (%.1f %%)", r.ArchiveSize, 100*float64(r.Fetched)/float64(r.ArchiveSize))
	}
	_, err := fmt.Fprintf(w, "%d files and %s verified against the manifest; %d bytes downloaded%s\n", len(r.Files), r.Manifest, r.Fetched, saved)
	return err
}
