package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

const interestsHelp = `Named interests (INTERESTS_FILE): each product event the receiver stores
that matches an interest is also stored on <INTEREST_SUBJECT_PREFIX>.<name>.
<the subject template's tokens>, e.g. cdse.interest.l2a-alps.created.
SENTINEL-2.S2MSI2A. The file:

  interests:
    - name: l2a-alps              # [a-z0-9-], at most 32 bytes
      events: [created, modified] # default [created]
      maxSensingAge: 30d          # optional: only products sensed in the last 30 days
      filter: >-
        Collection/Name eq 'SENTINEL-2' and OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((...))')

The filters are the catalogue's $filter language; docs/interests.md lists
what is supported. Anything else is refused, naming the interest and where.`

// newInterests is `receiver interests check`.
func newInterests(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "interests",
		Short: "Check the named interests: the file, and which of them a product matches",
		Long:  interestsHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want check")
		},
	}
	out := cli.AddOutputFlag(root)
	var file, product, ev string
	check := &cobra.Command{
		Use:   "check [--file FILE] [--product FILE|-]",
		Short: "Validate the interests file; with --product, say which interests a product matches and why not the others",
		Long: interestsHelp + `

check validates the file (exit 2 naming the interest and the position of
what is wrong). With --product (a notification as the catalogue sends it, or
a product entity; - for standard input) it prints, for each interest,
whether the product event is routed to it and, when not, why: the event,
the first term of its filter that fails (as written), or the sensing age.`,
		Example: `  receiver interests check --file interests.yaml
  receiver interests check --file interests.yaml --product testdata/notifications/created-s2.json
  curl -s .../Products(<id>) | receiver interests check --product - --event modified -o json`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			return out.Check()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return cli.Usagef("--file is required (or INTERESTS_FILE)")
			}
			show, err := interruptible(cmd.Context(), func(ctx context.Context) (func() error, error) {
				return runCheck(ctx, cmd, out, file, product, event.Kind(ev))
			})
			if err != nil {
				return err
			}
			return show()
		},
	}
	check.Flags().StringVar(&file, "file", getenv("INTERESTS_FILE"), "the interests file (default $INTERESTS_FILE)")
	check.Flags().StringVar(&product, "product", "", "a notification or a product entity (JSON) to evaluate; - for standard input")
	check.Flags().StringVar(&ev, "event", string(event.Created), "the event of a product entity given alone (a notification says its own)")
	root.AddCommand(check)
	return root
}

// runCheck is interests check's work, which may take long (a product on a
// standard input that does not end, a pathological filter): it returns
// what to print once it is done, or stops when ctx ends.
func runCheck(ctx context.Context, cmd *cobra.Command, out *cli.Output, file, product string, ev event.Kind) (func() error, error) {
	set, err := interestfile.Load(file)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	w := cmd.OutOrStdout()
	if product == "" {
		return func() error { return printInterests(w, out, set) }, nil
	}
	var raw []byte
	if product == "-" {
		raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<20))
	} else {
		raw, err = os.ReadFile(product)
	}
	if err != nil {
		return nil, cli.Usagef("--product: %v", err)
	}
	kind, p, err := readProduct(raw, ev)
	if err != nil {
		return nil, cli.Usagef("--product: %v", err)
	}
	vs, err := evaluate(ctx, set, kind, p, time.Now())
	if err != nil {
		return nil, err
	}
	return func() error {
		return out.Print(w, vs, func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INTEREST\tROUTED\tWHY NOT")
			for _, v := range vs {
				mark, why := "✔", "-"
				if !v.Matches {
					mark, why = "✘", v.Why
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, mark, why)
			}
			return tw.Flush()
		})
	}, nil
}

// evaluate is set.Evaluate an interest at a time, stopping between two
// when ctx ends: the work goes on in the background after interruptible
// has returned, and should not for long.
func evaluate(ctx context.Context, set *interestfile.Set, kind event.Kind, p *productfilter.Product, now time.Time) ([]interestfile.Verdict, error) {
	vs := make([]interestfile.Verdict, 0, set.Len())
	for i := range set.Interests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		one := interestfile.Set{Interests: set.Interests[i : i+1]}
		vs = append(vs, one.Evaluate(kind, p, now)...)
	}
	return vs, nil
}

// interruptible runs work and returns what it returns, or an error as soon
// as ctx ends (main's signal.NotifyContext: SIGTERM, SIGINT), without
// waiting for work, which cannot always stop sooner (a read of standard
// input, one evaluation) and ends with the process. Without it, SIGTERM
// was caught and ignored for as long as the work took.
func interruptible[T any](ctx context.Context, work func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := work(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
}

// readProduct reads a notification (its event and product) or a product
// entity alone (the event given).
func readProduct(raw []byte, ev event.Kind) (event.Kind, *productfilter.Product, error) {
	var probe struct {
		Event string `json:"SubscriptionEvent"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return "", nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if probe.Event != "" {
		n, err := notification.Decode(raw)
		if err != nil {
			return "", nil, err
		}
		if len(n.Value) == 0 {
			return n.Event, nil, nil
		}
		p, err := productfilter.FromEntity(n.Value)
		return n.Event, &p, err
	}
	switch ev {
	case event.Created, event.Modified, event.Deleted:
	default:
		return "", nil, fmt.Errorf("--event %q: want created, modified or deleted", ev)
	}
	p, err := productfilter.FromEntity(raw)
	return ev, &p, err
}

// printInterests lists a valid file's interests and what register apply
// would register.
func printInterests(w io.Writer, out *cli.Output, set *interestfile.Set) error {
	type row struct {
		Name          string   `json:"name"`
		Events        []string `json:"events"`
		MaxSensingAge string   `json:"maxSensingAge,omitempty"`
		Versions      string   `json:"versions"`
		Filter        string   `json:"filter"`
	}
	c := set.Compile()
	var rows []row
	for _, in := range set.Interests {
		r := row{Name: in.Name, Filter: in.Filter.String(), Versions: string(in.Versions)}
		for _, e := range in.Events {
			r.Events = append(r.Events, string(e))
		}
		if in.MaxSensingAge > 0 {
			r.MaxSensingAge = in.MaxSensingAge.String()
		}
		rows = append(rows, r)
	}
	doc := struct {
		Interests    []row    `json:"interests"`
		Subscription []string `json:"subscriptionEvents"`
		Filter       string   `json:"subscriptionFilter"`
	}{rows, kindStrings(c.Events), c.Filter}
	return out.Print(w, doc, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tEVENTS\tMAX SENSING AGE\tVERSIONS\tFILTER")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Events, ","), cli.OrDash(r.MaxSensingAge), r.Versions, r.Filter)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "\n%d interest(s), valid. The one subscription (register apply): events %s, filter:\n%s\n", len(rows), strings.Join(doc.Subscription, ","), c.Filter)
		return err
	})
}

func kindStrings(ks []event.Kind) []string {
	out := []string{}
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}
