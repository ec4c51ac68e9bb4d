package supersede

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// Acquisition is everything the versions bucket knows of one acquisition,
// for a reader that shows it (receiver trace); Lookup answers the one
// question the hot readers ask. It is read only: nothing here changes the
// record.
type Acquisition struct {
	// Rule is the naming rule of the record (versions.Rule's String).
	Rule string
	// Versions are the products the record keeps, oldest version first
	// (their Version strings sort as the versions do; equal ones and
	// siblings in the order they were taken in).
	Versions []Version
	// Changed is when the record was last stored: the versions
	// consumer's last decision on the acquisition. The record keeps no
	// time of its own per product.
	Changed time.Time
}

// Version is one product of an Acquisition.
type Version struct {
	ID, Name, Version string
	// SupersededBy is the id of the product it was announced superseded
	// by ("": none).
	SupersededBy string
	// Deleted: its deleted event was seen. Undecided: its version could
	// not be ordered with the latest known when it arrived.
	Deleted, Undecided bool
	// Latest: it is at the latest version known (siblings and equal
	// versions share the place).
	Latest bool
}

// ReadAcquisition reads the record of acquisition (a Cdse-Acquisition)
// from kv, the versions bucket; false when the bucket has none (not a
// valid key, not seen yet, or forgotten after RECEIVER_VERSIONS_MAX_AGE).
// A record that cannot be read is an error: a reader that shows it should
// say so rather than show nothing.
func ReadAcquisition(ctx context.Context, kv jetstream.KeyValue, acquisition string) (Acquisition, bool, error) {
	if !versions.ValidKey(acquisition) {
		return Acquisition{}, false, nil
	}
	e, err := kv.Get(ctx, acquisition)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Acquisition{}, false, nil
	}
	if err != nil {
		return Acquisition{}, false, fmt.Errorf("versions bucket: read %s: %w", acquisition, err)
	}
	var r record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Acquisition{}, false, fmt.Errorf("versions bucket: record %s (revision %d): %w", acquisition, e.Revision(), err)
	}
	a := Acquisition{Rule: r.Rule, Changed: e.Created().UTC()}
	id := versions.Identity{Acquisition: acquisition, Rule: ruleOf(r.Rule)}
	latest := r.latest(id)
	for i, p := range r.Products {
		a.Versions = append(a.Versions, Version{ID: p.ID, Name: p.Name, Version: p.Version, SupersededBy: p.By,
			Deleted: p.Deleted, Undecided: p.Undecided, Latest: slices.Contains(latest, i)})
	}
	slices.SortStableFunc(a.Versions, func(x, y Version) int { return strings.Compare(x.Version, y.Version) })
	return a, true, nil
}
