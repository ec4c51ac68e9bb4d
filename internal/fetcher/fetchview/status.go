package fetchview

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchstatus"
)

// StatusTable writes a fetcher's /status as `fetcher status` prints it:
// readiness and its failing checks, the consumer, then a table each of the
// downloads, the last stored and the failures.
func StatusTable(w io.Writer, st *fetchstatus.Fetcher) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ready := "yes"
	if !st.Ready {
		ready = "no"
	}
	fmt.Fprintf(tw, "READY\t%s\n", ready)
	for _, check := range slices.Sorted(maps.Keys(st.NotReady)) {
		fmt.Fprintf(tw, "  %s\t%s\n", check, st.NotReady[check])
	}
	if c := st.Consumer; c != nil {
		fmt.Fprintf(tw, "CONSUMER\t%s on %s: %d waiting, %d in flight\n", c.Name, c.Stream, c.Waiting, c.InFlight)
	} else {
		fmt.Fprintf(tw, "CONSUMER\tunknown: %s\n", st.ConsumerError)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "DOWNLOADING\tBYTES\tSIZE\tRATE\tLEFT\tKEY")
	for _, d := range st.Downloads {
		rate, left := fetch.HumanBytes(d.Rate)+"/s", cmp.Or(d.ETA, "-")
		if d.Waiting != "" {
			rate, left = d.Waiting, "-"
		}
		size := "unknown"
		if d.Size > 0 {
			size = fetch.HumanBytes(float64(d.Size))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ProductID, fetch.HumanBytes(float64(d.Bytes)), size, rate, left, d.Key)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "STORED\tAT\tSIZE\tVERIFIED\tURL")
	for _, s := range st.LastStored {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\n", s.ProductID, s.At.UTC().Format(time.RFC3339), fetch.HumanBytes(float64(s.Size)), s.Verified, s.URL)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FAILED\tCOUNT")
	for _, r := range slices.Sorted(maps.Keys(st.Failures)) {
		fmt.Fprintf(tw, "%s\t%d\n", r, st.Failures[r])
	}
	return tw.Flush()
}
