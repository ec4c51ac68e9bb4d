package cli

import (
	"context"
	"fmt"
	"strconv"
)

// What the verbs over a stream's kept messages share (receiver quarantine
// list|show|replay|drop, fetcher failed list|show|retry|drop): messages
// named by their sequence, tables with empty cells, runs cut short.

// Seqs reads the sequence numbers a verb is given; one that is not (not a
// number, or 0) is a usage error that points at list, the verb that shows
// them ("quarantine list").
func Seqs(args []string, list string) ([]uint64, error) {
	out := make([]uint64, 0, len(args))
	for _, a := range args {
		seq, err := strconv.ParseUint(a, 10, 64)
		if err != nil || seq == 0 {
			return nil, Usagef("SEQ %q is not a sequence number (see %s)", a, list)
		}
		out = append(out, seq)
	}
	return out, nil
}

// NotFound makes a verb that did what it could exit 1 when n of the
// sequences it was given were not what it acts on, as kubectl delete does
// for a missing name: "n of the sequences given are <are>". n == 0 is nil.
func NotFound(n int, are string) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of the sequences given are %s", n, are)
}

// Interrupted reports a cancelled run as such rather than as the error of
// whatever call it interrupted.
func Interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return err
}

// OrDash is s, or "-" for an empty cell of a table.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cut is s cut to its first n bytes, with "…" where it was cut, for a cell
// of a table.
func Cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
