package trace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
)

// Where the acquisition key was read: Versions.From.
const (
	// FromMessage: the Cdse-Acquisition of the product's stored messages.
	FromMessage = "message"
	// FromNotice: the Cdse-Acquisition of a notice naming it (its
	// messages aged out of the stream, or carry none).
	FromNotice = "notice"
	// FromName: computed from its name (internal/cdse/versions), as the
	// ingest path computes the header: no message of it carries one.
	FromName = "name"
)

// The traced product's place among its acquisition's versions:
// Versions.Standing.
const (
	StandingLatest     = "latest"     // at the latest version known
	StandingSuperseded = "superseded" // announced superseded (SupersededBy)
	StandingDeleted    = "deleted"    // its deleted event was seen; nothing known replaces it
	StandingUndecided  = "undecided"  // its version could not be ordered with the latest known: never linked
	StandingOlder      = "older"      // not the latest, and linked to nothing (the record forgot what superseded it)
	StandingUnknown    = "unknown"    // the bucket does not hold it (yet: it trails the stream)
)

// NoAcquisition is Versions.Note for a product no naming rule applies to.
const NoAcquisition = "no acquisition (no naming rule applies)"

// Versions is what the trace knows of the product's acquisition: its key,
// every version the versions bucket's record holds, oldest first, the
// traced product's place among them, and the notices of supersession that
// name it.
type Versions struct {
	// Acquisition is the product's Cdse-Acquisition ("": none, Note says
	// why), From where it was read.
	Acquisition string `json:"acquisition,omitempty"`
	From        string `json:"from,omitempty"`
	// Bucket is the versions bucket read; BucketMissing: there is none
	// (RECEIVER_VERSIONS off), which is no error.
	Bucket        string `json:"bucket"`
	BucketMissing bool   `json:"bucketMissing,omitempty"`
	// Note says in words why something is not shown: no acquisition, no
	// bucket, no record (yet).
	Note string `json:"note,omitempty"`
	// Rule is the naming rule of the record; Changed when the versions
	// consumer last stored it (its last decision on the acquisition).
	Rule    string     `json:"rule,omitempty"`
	Changed *time.Time `json:"changed,omitempty"`
	// Versions are the record's products, oldest version first.
	Versions []Version `json:"versions"`
	// Standing is the traced product's place ("" when no record was
	// read); SupersededBy what it was announced superseded by.
	Standing     string   `json:"standing,omitempty"`
	SupersededBy *Product `json:"supersededBy,omitempty"`
	// Notices are the notices of supersession naming the product (as
	// the superseded one or the one superseding), oldest first, at most
	// Options.MaxNotices; MoreNotices counts those left out.
	Notices     []Notice `json:"notices"`
	MoreNotices int      `json:"moreNotices,omitempty"`
}

// Product is a product named by its id and name.
type Product struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Version is one version of the acquisition.
type Version struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Traced: the product the trace is of.
	Traced bool `json:"traced,omitempty"`
	// Latest: at the latest version known (siblings and equal versions
	// share the place).
	Latest bool `json:"latest,omitempty"`
	// SupersededBy: announced superseded by that product.
	SupersededBy *Product `json:"supersededBy,omitempty"`
	Deleted      bool     `json:"deleted,omitempty"`
	Undecided    bool     `json:"undecided,omitempty"`
	// Decided is when the versions consumer announced this version's
	// place, as a notice found says: the notice naming it superseded,
	// else one naming it as the newer arrival. The bucket keeps no time
	// per version, so a version no notice found names (the first of an
	// acquisition, a sibling) has none.
	Decided *time.Time `json:"decided,omitempty"`
}

// Notice is one notice of supersession naming the product.
type Notice struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	Subject    string    `json:"subject"`
	Reason     string    `json:"reason"`
	Superseded Product   `json:"superseded"`
	By         Product   `json:"by"`
}

// learn notes, from the headers of a message about the product, its
// acquisition and its name (a query by id does not give it).
func (f *finder) learn(h nats.Header, from string) {
	if a := h.Get(event.HeaderAcquisition); f.acquisition == "" && versions.ValidKey(a) {
		f.acquisition, f.acquisitionFrom = a, from
	}
	if f.name == "" {
		f.name = h.Get(event.HeaderProductName)
	}
}

// names says whether a product named by id and name is the traced one,
// noting its id when the query is a name (as matches).
func (f *finder) names(id, name string) bool {
	id = strings.ToLower(id)
	if f.q.ID != "" {
		return id == f.q.ID
	}
	if !strings.EqualFold(name, f.q.Name) {
		return false
	}
	if id != "" {
		f.ids[id] = true
	}
	return true
}

// notice keeps a notice of supersession (read with the product stream's
// headers, which say all the section shows) when it names the product.
func (f *finder) notice(m jetstream.Msg, md *jetstream.MsgMetadata) {
	h := m.Headers()
	n := Notice{Seq: md.Sequence.Stream, Time: md.Timestamp.UTC(), Subject: m.Subject(), Reason: h.Get(event.HeaderSupersededReason),
		Superseded: Product{ID: h.Get(event.HeaderProductID), Name: h.Get(event.HeaderProductName)},
		By:         Product{ID: h.Get(event.HeaderSupersededBy), Name: h.Get(event.HeaderSupersededByName)}}
	superseded, by := f.names(n.Superseded.ID, n.Superseded.Name), f.names(n.By.ID, n.By.Name)
	if !superseded && !by {
		return
	}
	if f.name == "" {
		if superseded {
			f.name = n.Superseded.Name
		} else {
			f.name = n.By.Name
		}
	}
	f.learn(h, FromNotice)
	v := f.res.Versions
	if len(v.Notices) >= f.o.MaxNotices {
		v.MoreNotices++
		return
	}
	v.Notices = append(v.Notices, n)
}

// acquisitionOf is the acquisition key of a product called name, as the
// ingest path computes it. A Sentinel-1 version needs a date a name alone
// does not give; its acquisition does not depend on it, so any date
// serves.
func acquisitionOf(name string) (string, bool) {
	id, ok := versions.Identify(name, versions.Attrs{PublicationDate: time.Unix(0, 0)})
	return id.Acquisition, ok
}

// versions fills the versions section once the streams are read: the
// acquisition the messages gave (else computed from the name), the
// bucket's record of it, and the decisions' times the notices give.
func (f *finder) versions(ctx context.Context, js jetstream.JetStream) error {
	v := f.res.Versions
	if f.acquisition == "" && f.name != "" {
		if a, ok := acquisitionOf(f.name); ok {
			f.acquisition, f.acquisitionFrom = a, FromName
		}
	}
	if f.acquisition == "" {
		v.Note = NoAcquisition
		if f.name == "" {
			v.Note = "no acquisition: no message gives the product's name"
		}
		return nil
	}
	v.Acquisition, v.From = f.acquisition, f.acquisitionFrom
	kv, err := js.KeyValue(ctx, v.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		v.BucketMissing = true
		v.Note = "no versions bucket " + v.Bucket + " (RECEIVER_VERSIONS is off, or the receiver has not run its versions consumer)"
		return nil
	}
	if err != nil {
		return fmt.Errorf("versions bucket %s: %w", v.Bucket, err)
	}
	a, ok, err := supersede.ReadAcquisition(ctx, kv, f.acquisition)
	if err != nil {
		return err
	}
	if !ok {
		v.Standing = StandingUnknown
		v.Note = "the versions bucket has no record of the acquisition (not decided yet: the versions consumer trails the stream; or forgotten after RECEIVER_VERSIONS_MAX_AGE)"
		return nil
	}
	v.Rule, v.Changed = a.Rule, &a.Changed
	names := map[string]string{}
	for _, p := range a.Versions {
		names[p.ID] = p.Name
	}
	v.Standing = StandingUnknown
	for _, p := range a.Versions {
		x := Version{ID: p.ID, Name: p.Name, Version: p.Version, Latest: p.Latest, Deleted: p.Deleted, Undecided: p.Undecided,
			Traced: f.names(p.ID, p.Name), Decided: decided(p.ID, v.Notices)}
		if p.SupersededBy != "" {
			x.SupersededBy = &Product{ID: p.SupersededBy, Name: names[p.SupersededBy]}
		}
		if x.Traced {
			v.Standing, v.SupersededBy = standing(x), x.SupersededBy
		}
		v.Versions = append(v.Versions, x)
	}
	if v.Standing == StandingUnknown {
		v.Note = "the record of the acquisition does not hold the product (not decided yet: the versions consumer trails the stream)"
	}
	return nil
}

// standing is a version's place.
func standing(x Version) string {
	switch {
	case x.SupersededBy != nil:
		return StandingSuperseded
	case x.Deleted:
		return StandingDeleted
	case x.Undecided:
		return StandingUndecided
	case x.Latest:
		return StandingLatest
	}
	return StandingOlder
}

// decided is when the notices say the place of product id was decided:
// the notice naming it superseded, else the first naming it as the newer
// arrival that superseded another (an older arrival's notice, or a
// deletion's, tells when the other was decided, not it).
func decided(id string, notices []Notice) *time.Time {
	var at *time.Time
	for i := range notices {
		n := &notices[i]
		switch {
		case strings.EqualFold(n.Superseded.ID, id):
			return &n.Time
		case at == nil && strings.EqualFold(n.By.ID, id) && n.Reason == string(event.NewerArrived):
			at = &n.Time
		}
	}
	return at
}
