package supersede

import (
	"slices"
	"strings"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// record is what the versions bucket keeps of one acquisition (its key):
// the products seen, in the order they were taken in.
type record struct {
	// Rule is the naming rule of the acquisition (versions.Rule's
	// String): a record of another rule (the rules changed) is started
	// anew.
	Rule     string  `json:"rule"`
	Products []known `json:"products"`
}

// known is one product of an acquisition.
type known struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	Collection  string `json:"collection,omitempty"`
	ProductType string `json:"productType,omitempty"`
	// By is the product it was announced superseded by ("": none).
	By string `json:"by,omitempty"`
	// Deleted: its deleted event was seen. It is never named latest.
	Deleted bool `json:"deleted,omitempty"`
	// Undecided: its version could not be ordered with the latest known
	// when it arrived (versions.Undecided); it is never linked.
	Undecided bool `json:"undecided,omitempty"`
	// Interests are the interests taking the latest versions only the
	// ingest path routed it to, as the message that took it in names
	// them (Copier.Interests): a notice naming it is copied to them.
	Interests []string `json:"interests,omitempty"`
	// Copied are the Nats-Msg-Id of its product messages whose copies
	// to those interests were decided (made or skipped), the last
	// maxCopied: a replay does not copy them again.
	Copied []string `json:"copied,omitempty"`
}

// maxCopied bounds the product messages a product notes as copied: its
// created event, a few modifications, its deletion.
const maxCopied = 8

// copied says whether the copies of the product message msgID of
// productID were decided.
func (r *record) copied(productID, msgID string) bool {
	i := r.index(productID)
	return i >= 0 && msgID != "" && slices.Contains(r.Products[i].Copied, msgID)
}

// noteCopied notes them; false when the product is not kept (forgotten,
// maxKnown) or the message has no id.
func (r *record) noteCopied(productID, msgID string) bool {
	i := r.index(productID)
	if i < 0 || msgID == "" {
		return false
	}
	k := &r.Products[i]
	k.Copied = append(k.Copied, msgID)
	if len(k.Copied) > maxCopied {
		k.Copied = k.Copied[len(k.Copied)-maxCopied:]
	}
	return true
}

// maxKnown bounds the products a record keeps: past it, the first one
// that is no longer among the latest (superseded, deleted or undecided)
// is forgotten. Real acquisitions have a few versions.
const maxKnown = 32

// notice is one product superseded by another, to announce.
type notice struct {
	superseded, by known
	reason         event.SupersededReason
	cause          string // DeletionCause, with event.DeletedObsolete
}

// outcome is what one product event did to a record.
type outcome struct {
	notices []notice
	// undecided is the reason to count, when the product's version could
	// not be ordered (cdse_receiver_versions_undecided_total).
	undecided string
	// changed: the record is to be stored.
	changed bool
}

// The reasons of cdse_receiver_versions_undecided_total.
const (
	// UndecidedDateSources: two Sentinel-1 versions dated from different
	// attributes (processingDate, PublicationDate), which do not order
	// them.
	UndecidedDateSources = "date_sources"
	// UndecidedOther: any other pair versions.Relate does not order (none
	// today: a rule that learns one is counted here until it is named).
	UndecidedOther = "other"
)

// decide applies one product event to the record of its acquisition:
// created and modified events of a product not seen yet take it in,
// comparing it with the latest version known; a deleted event marks it
// deleted and, when the catalogue deleted it as obsolete, duplicated or
// reprocessed, links it to the latest version known. It is the one place
// the rules of supersession are written, and touches nothing but r.
//
// Each pair (superseded, by) is announced at most once: a product already
// taken in is not compared again (a replay, a second replica, a
// modification), and By remembers what a product was announced superseded
// by.
func decide(r *record, id versions.Identity, p known, ev event.Kind, cause string) outcome {
	var o outcome
	if r.Rule != id.Rule.String() {
		*r = record{Rule: id.Rule.String()}
	}
	i := r.index(p.ID)
	if ev == event.Deleted {
		return r.deleted(id, i, p, cause)
	}
	if i >= 0 {
		return o
	}
	o.changed = true
	latest := r.latest(id)
	if len(latest) == 0 {
		r.add(p)
		return o
	}
	top := r.Products[latest[0]]
	switch rel := versions.Relate(identity(id, p), identity(id, top)); rel {
	case versions.Newer:
		for _, j := range latest {
			l := &r.Products[j]
			o.notices = append(o.notices, notice{superseded: *l, by: p, reason: event.NewerArrived})
			l.By = p.ID
		}
	case versions.Older:
		p.By = top.ID
		o.notices = append(o.notices, notice{superseded: p, by: top, reason: event.ArrivedOlder})
	case versions.Sibling, versions.Equal:
	default:
		p.Undecided = true
		o.undecided = undecidedReason(id, p, top)
	}
	r.add(p)
	return o
}

// deleted is decide for a deleted event of p (at index i, or -1 when its
// product was never taken in: it is now, so that it is never named
// latest).
func (r *record) deleted(id versions.Identity, i int, p known, cause string) outcome {
	var o outcome
	if i < 0 {
		r.add(p)
		i, o.changed = r.index(p.ID), true
	}
	d := &r.Products[i]
	if !d.Deleted {
		d.Deleted, o.changed = true, true
	}
	if !obsolete(cause) || d.By != "" || d.Undecided {
		return o
	}
	latest := r.latest(id)
	if len(latest) == 0 {
		return o // nothing known replaces it
	}
	top := r.Products[latest[0]]
	switch versions.Relate(identity(id, *d), identity(id, top)) {
	case versions.Older:
		d.By, o.changed = top.ID, true
		o.notices = append(o.notices, notice{superseded: *d, by: top, reason: event.DeletedObsolete, cause: cause})
	case versions.Newer, versions.Equal, versions.Sibling:
		// It was the latest, or shared the place: nothing known replaces
		// it. A sibling or an equal version deleted as a duplicate is
		// never named superseded by its twin (siblings can differ in
		// content: S2 products of two ground stations), whatever the
		// catalogue's free text says.
	default:
		// Only a product never taken in can be undecided here (those
		// taken in were ordered then): counted once.
		d.Undecided, o.changed = true, true
		o.undecided = undecidedReason(id, *d, top)
	}
	return o
}

// obsolete says whether a DeletionCause (free text: "Obsolete product",
// "Duplicated product", "Reprocessed product", and whatever the catalogue
// writes next) says the product was replaced.
func obsolete(cause string) bool {
	c := strings.ToLower(cause)
	return strings.Contains(c, "obsolete") || strings.Contains(c, "duplicat") || strings.Contains(c, "reprocess")
}

// latest are the indices of the products at the latest version known:
// neither deleted nor undecided, and none newer among them (siblings and
// equal versions share the place), in the order they were taken in.
func (r *record) latest(id versions.Identity) []int {
	var out []int
	for i, p := range r.Products {
		if p.Deleted || p.Undecided {
			continue
		}
		if len(out) == 0 {
			out = append(out, i)
			continue
		}
		switch versions.Relate(identity(id, p), identity(id, r.Products[out[0]])) {
		case versions.Newer:
			out = append(out[:0], i)
		case versions.Sibling, versions.Equal:
			out = append(out, i)
		}
	}
	return out
}

// decision is whether the product event of productID (ev) is copied to the
// interests that take the latest versions only, as the record stands
// after it was taken in: not when it is known superseded, nor when it is
// older than the latest version known (a product taken in before, which
// no notice links: deleted for another cause than obsolescence, then
// modified).
func (r *record) decision(id versions.Identity, productID string, ev event.Kind) string {
	if ev == event.Deleted {
		return CopyDeleted
	}
	i := r.index(productID)
	switch {
	case i < 0:
		return CopyLatest // forgotten already (maxKnown): nothing says it is superseded
	case r.Products[i].By != "":
		return CopySkipped
	case r.Products[i].Undecided:
		return CopyUndecided
	}
	latest := r.latest(id)
	if len(latest) == 0 || latest[0] == i {
		return CopyLatest
	}
	switch versions.Relate(identity(id, r.Products[i]), identity(id, r.Products[latest[0]])) {
	case versions.Older:
		return CopySkipped
	case versions.Newer, versions.Sibling, versions.Equal:
		return CopyLatest
	}
	// Not ordered: nothing says it is superseded, and it is counted
	// where it was taken in.
	return CopyUndecided
}

func (r *record) index(productID string) int {
	for i, p := range r.Products {
		if p.ID == productID {
			return i
		}
	}
	return -1
}

// add takes p in, forgetting the first product no longer among the
// latest when the record is full.
func (r *record) add(p known) {
	r.Products = append(r.Products, p)
	if len(r.Products) <= maxKnown {
		return
	}
	drop := 0
	for i, k := range r.Products[:len(r.Products)-1] {
		if k.By != "" || k.Deleted || k.Undecided {
			drop = i
			break
		}
	}
	r.Products = append(r.Products[:drop], r.Products[drop+1:]...)
}

// identity is p as versions.Relate compares it, in id's acquisition.
func identity(id versions.Identity, p known) versions.Identity {
	return versions.Identity{Acquisition: id.Acquisition, Version: p.Version, Rule: id.Rule}
}

func undecidedReason(id versions.Identity, a, b known) string {
	if id.Rule == versions.RuleS1 && a.Version != "" && b.Version != "" && a.Version[0] != b.Version[0] {
		return UndecidedDateSources
	}
	return UndecidedOther
}
