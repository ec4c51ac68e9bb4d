package supersede

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// Standing is what the versions bucket knows of one product: for the
// readers that ask "is this product superseded?" (an interest that wants
// the latest versions only, a fetcher that skips superseded products,
// receiver trace).
type Standing struct {
	// Known: the Tracker has taken the product in.
	Known bool
	// SupersededBy is the product it was announced superseded by (a
	// notice was published), nil when none: not superseded as far as the
	// bucket knows.
	SupersededBy *event.VersionedProduct
	// Deleted: its deleted event was seen.
	Deleted bool
	// Undecided: its version could not be ordered with the latest known.
	Undecided bool
	// Latest are the products at the latest version known of the
	// acquisition (siblings and equal versions share it), neither
	// deleted nor undecided; none when the acquisition is not known.
	Latest []event.VersionedProduct
}

// Lookup reads what kv, the versions bucket (topology.Versions, or for a
// reader js.KeyValue(ctx, topo.VersionsBucket())), knows of productID
// (its Cdse-Product-Id) in acquisition (its Cdse-Acquisition). The bucket
// trails the product stream by what the Tracker has yet to read: a product
// just stored may not be known yet. A product whose version is newer than
// every one of Latest (versions.Relate with the rule of its name) is not
// superseded, known or not.
func Lookup(ctx context.Context, kv jetstream.KeyValue, acquisition, productID string) (Standing, error) {
	var s Standing
	if !versions.ValidKey(acquisition) {
		return s, nil // no naming rule decided: nothing is known of it
	}
	r, _, err := read(ctx, kv, acquisition)
	if err != nil || r.Rule == "" {
		return s, err
	}
	id := versions.Identity{Acquisition: acquisition, Rule: ruleOf(r.Rule)}
	for _, j := range r.latest(id) {
		s.Latest = append(s.Latest, versioned(r.Products[j]))
	}
	i := r.index(productID)
	if i < 0 {
		return s, nil
	}
	p := r.Products[i]
	s.Known, s.Deleted, s.Undecided = true, p.Deleted, p.Undecided
	if p.By != "" {
		by := event.VersionedProduct{ID: p.By}
		if j := r.index(p.By); j >= 0 {
			by = versioned(r.Products[j])
		}
		s.SupersededBy = &by
	}
	return s, nil
}

// Decide is the versions consumer's decision on the product event n for
// the interests that take the latest versions only (CopyLatest,
// CopyUnversioned, CopyUndecided, CopyDeleted or CopySkipped), as if it
// took n in now, on the record kv holds of its acquisition (nil kv, or
// none: nothing known). Nothing is written. For the readers that copy
// to such an interest past the consumer (receiver backfill --interest):
// the one rule, so that a product older than a version known is skipped
// whether or not the consumer ever saw it.
func Decide(ctx context.Context, kv jetstream.KeyValue, n *notification.Notification) (string, error) {
	id, p, cause, ok := takenIn(n)
	if !ok {
		if n.Event == event.Deleted {
			return CopyDeleted, nil
		}
		return CopyUnversioned, nil
	}
	var r record
	if kv != nil {
		var err error
		if r, _, err = read(ctx, kv, id.Acquisition); err != nil {
			return "", err
		}
	}
	decide(&r, id, p, n.Event, cause)
	return r.decision(id, p.ID, n.Event), nil
}

func versioned(k known) event.VersionedProduct {
	return event.VersionedProduct{ID: k.ID, Name: k.Name, Version: k.Version}
}

// ruleOf is the rule a record names (versions.Rule's String).
func ruleOf(name string) versions.Rule {
	for _, r := range []versions.Rule{versions.RuleS1, versions.RuleS2, versions.RuleS3, versions.RuleS5P} {
		if r.String() == name {
			return r
		}
	}
	return versions.NoRule
}
