package trace

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// Table writes the table of a trace (receiver trace's table and -o wide):
// the hits, then the versions section; wide adds the event and the
// product's id and name, the detail uncut, and the versions' ids.
func Table(w io.Writer, res Result, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "STREAM\tSEQ\tTIME\tSUBJECT\tWHAT\tSOURCE\tDETAIL"
	if wide {
		head += "\tEVENT\tPRODUCT\tNAME"
	}
	fmt.Fprintln(tw, head)
	for _, h := range res.Hits {
		what := h.What
		switch {
		case h.Interest != "":
			what += " " + h.Interest
		case h.Reason != "":
			what += " " + h.Reason
		}
		detail := h.Detail
		if !wide {
			detail = cli.Cut(detail, 80)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s", h.Stream, h.Seq, h.Time.Format(time.RFC3339), h.Subject, what, cli.OrDash(h.Source), cli.OrDash(detail))
		if wide {
			fmt.Fprintf(tw, "\t%s\t%s\t%s", cli.OrDash(h.Event), cli.OrDash(h.ProductID), cli.OrDash(h.ProductName))
		}
		fmt.Fprintln(tw)
	}
	if res.More > 0 {
		fmt.Fprintf(tw, "… and %d more\n", res.More)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Versions != nil {
		return versionsTable(w, res.Versions, wide)
	}
	return nil
}

// acquisitionFrom says where a trace read the acquisition key.
var acquisitionFrom = map[string]string{
	FromMessage: "its messages' Cdse-Acquisition",
	FromNotice:  "a notice's Cdse-Acquisition",
	FromName:    "computed from its name",
}

// versionsTable is the versions section of a trace, below its hits: the
// acquisition, its versions oldest first (the traced one marked *), the
// product's standing and the notices naming it; wide adds the ids.
func versionsTable(w io.Writer, v *Versions, wide bool) error {
	fmt.Fprintln(w)
	if v.Acquisition == "" {
		_, err := fmt.Fprintf(w, "VERSIONS: %s\n", v.Note)
		return err
	}
	head := fmt.Sprintf("VERSIONS of acquisition %s (%s); bucket %s", v.Acquisition, acquisitionFrom[v.From], v.Bucket)
	if v.Changed != nil {
		head += ", last changed " + v.Changed.Format(time.RFC3339)
	}
	if v.Note != "" {
		head += ": " + v.Note
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(v.Versions) > 0 {
		cols := "\tVERSION\tDECIDED\tNAME\tSTANDING"
		if wide {
			cols += "\tID"
		}
		fmt.Fprintln(tw, cols)
		for _, x := range v.Versions {
			mark, decided := "", "-"
			if x.Traced {
				mark = "*"
			}
			if x.Decided != nil {
				decided = x.Decided.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", mark, x.Version, decided, x.Name, versionStanding(x, wide))
			if wide {
				fmt.Fprintf(tw, "\t%s", x.ID)
			}
			fmt.Fprintln(tw)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch v.Standing {
	case "", StandingUnknown:
	case StandingSuperseded:
		fmt.Fprintf(w, "This product (*): superseded by %s (%s)\n", cli.OrDash(v.SupersededBy.Name), v.SupersededBy.ID)
	case StandingUndecided:
		fmt.Fprintln(w, "This product (*): undecided: its version cannot be ordered with the latest known, so nothing supersedes it nor is superseded by it")
	default:
		fmt.Fprintf(w, "This product (*): %s\n", v.Standing)
	}
	if len(v.Notices) == 0 {
		_, err := fmt.Fprintln(w, "No notice of supersession names it.")
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Notices of supersession naming it (on the product stream):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tSUBJECT\tREASON\tSUPERSEDED\tBY")
	for _, n := range v.Notices {
		sup, by := cli.OrDash(n.Superseded.Name), cli.OrDash(n.By.Name)
		if wide {
			sup, by = sup+" "+n.Superseded.ID, by+" "+n.By.ID
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", n.Seq, n.Time.Format(time.RFC3339), n.Subject, n.Reason, sup, by)
	}
	if v.MoreNotices > 0 {
		fmt.Fprintf(tw, "… and %d more\n", v.MoreNotices)
	}
	return tw.Flush()
}

// versionStanding is a version's STANDING.
func versionStanding(x Version, wide bool) string {
	var s string
	switch {
	case x.SupersededBy != nil:
		s = "superseded by " + cli.OrDash(x.SupersededBy.Name)
		if wide {
			s += " (" + x.SupersededBy.ID + ")"
		}
	case x.Undecided:
		s = "undecided"
	case x.Latest:
		s = "latest"
	default:
		s = "older"
	}
	if x.Deleted {
		s += ", deleted"
	}
	return s
}
