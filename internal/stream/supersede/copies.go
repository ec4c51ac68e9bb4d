package supersede

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// Copier makes the copies of the interests that take the latest versions
// only (versions: latest; internal/ingest/interest implements it): the
// ingest path makes no copy for them but names them on the product
// message (event.HeaderLatestInterests) as it routed it when it stored
// it; the Tracker stores these after its decision on each product event,
// before it acks the event. Every copy carries a Nats-Msg-Id derived from
// the product message's (or the notice's), so that an event taken again
// after a crash stores nothing twice.
type Copier interface {
	// Interests are the names of those interests the product message p
	// names: the notices of its acquisition are copied to them. The
	// Tracker keeps them with the product in the versions bucket, so
	// that a notice reaches the interests of both its products.
	Interests(p Product) []string
	// Copies are the copies of the product message p to those
	// interests it names that still exist, each as the ingest path
	// would have made it: the same subject, headers and Nats-Msg-Id;
	// dropped names those whose copy cannot be made, now or ever (the
	// message is not under the route's product subjects).
	Copies(p Product) (copies []*nats.Msg, dropped []string)
	// Notice is the copy of the notice m to the interest name, on a
	// subject under the interest's own; false when no interest of that
	// name takes the latest versions only in the set now in force (the
	// names kept in the bucket are those of when each product was taken
	// in: removed, renamed or switched to all since).
	Notice(m *nats.Msg, name string) (*nats.Msg, bool)
}

// Product is a product message as the product stream stored it, with
// its notification.
type Product struct {
	Subject string
	Header  nats.Header
	Data    []byte
	N       *notification.Notification
}

// The decisions of cdse_receiver_versions_interest_copies_total: why a
// copy was stored, or not.
const (
	// CopyLatest: the product was the latest version known when decided
	// (or a sibling or an equal version of it).
	CopyLatest = "latest"
	// CopyUnversioned: no naming rule gives the product an acquisition,
	// so nothing supersedes it: it is its own latest.
	CopyUnversioned = "unversioned"
	// CopyUndecided: its version could not be ordered with the latest
	// known (versions.Undecided): copied, since nothing says it is
	// superseded.
	CopyUndecided = "undecided"
	// CopyDeleted: a deleted event, copied as the ingest path copies it
	// (a deletion is not a version).
	CopyDeleted = "deleted"
	// CopySkipped: the product was already superseded when decided (it
	// arrived older than a version known, or a modification of a
	// superseded product): not copied.
	CopySkipped = "skipped_superseded"
	// CopyNotice: a notice of the interest's acquisitions.
	CopyNotice = "notice"
	// CopyDropped: a copy that cannot be made (Copier.Copies' dropped),
	// whatever the decision: the product message stays on the product
	// stream, the interest gets no copy of it.
	CopyDropped = "dropped"
)

// copyProduct stores the copies of p after the decision: none when it is
// superseded (counted as skipped). It returns how many interests take it.
func (t *Tracker) copyProduct(ctx context.Context, p Product, decision string) (int, error) {
	if t.o.Copier == nil {
		return 0, nil
	}
	copies, dropped := t.o.Copier.Copies(p)
	for _, name := range dropped {
		// Taken again it would fail again: counted, and said loudly.
		t.copies.WithLabelValues(name, CopyDropped).Inc()
		t.log.WithFields(logrus.Fields{"interest": name, "subject": p.Subject, "product_id": p.N.ProductID, "product_name": p.N.ProductName}).
			Error("versions: a product message not under this receiver's product subjects (NATS_SUBJECT_PREFIX changed?): no copy for an interest that takes the latest versions only (counted in cdse_receiver_versions_interest_copies_total{decision=\"dropped\"})")
	}
	for _, c := range copies {
		name := c.Header.Get(event.HeaderInterest)
		if decision == CopySkipped {
			t.copies.WithLabelValues(name, decision).Inc()
			t.log.WithFields(logrus.Fields{"interest": name, "product_id": p.N.ProductID, "product_name": p.N.ProductName}).
				Debug("versions: a superseded product is not copied to an interest that takes the latest versions only")
			continue
		}
		if err := t.store(ctx, c, decision); err != nil {
			return 0, err
		}
	}
	return len(copies), nil
}

// copyOnce stores the copies of the product event stored (of productID,
// event ev) as the record r decides them, unless r notes them made, and
// notes them; true when r changed.
func (t *Tracker) copyOnce(ctx context.Context, r *record, id versions.Identity, productID string, ev event.Kind, stored Product) (bool, error) {
	if t.o.Copier == nil {
		return false, nil
	}
	msgID := stored.Header.Get(event.HeaderMsgID)
	if r.copied(productID, msgID) {
		return false, nil
	}
	n, err := t.copyProduct(ctx, stored, r.decision(id, productID, ev))
	if err != nil || n == 0 {
		return false, err // nothing to note: no record written for it
	}
	return r.noteCopied(productID, msgID), nil
}

// copyNotice stores the notice m's copies to the interests of both its
// products (known.Interests) that take the latest versions only now.
func (t *Tracker) copyNotice(ctx context.Context, m *nats.Msg, n notice) error {
	if t.o.Copier == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, names := range [][]string{n.superseded.Interests, n.by.Interests} {
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			c, ok := t.o.Copier.Notice(m, name)
			if !ok {
				continue
			}
			if err := t.store(ctx, c, CopyNotice); err != nil {
				return err
			}
		}
	}
	return nil
}

// store puts one copy on the product stream, counting it when JetStream
// stored it anew.
func (t *Tracker) store(ctx context.Context, c *nats.Msg, decision string) error {
	ack, err := t.topo.JetStream().PublishMsg(ctx, c, jetstream.WithExpectStream(t.topo.ProductStream()))
	if err != nil {
		return fmt.Errorf("publish the copy %s: %w", c.Header.Get(event.HeaderMsgID), err)
	}
	if !ack.Duplicate {
		t.copies.WithLabelValues(c.Header.Get(event.HeaderInterest), decision).Inc()
	}
	return nil
}
