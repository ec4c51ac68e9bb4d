package event

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Notices of supersession (docs/consumers.md, "Versions of one
// acquisition"): when a product of an acquisition (HeaderAcquisition)
// arrives newer than the latest version the receiver knows, the receiver
// puts a Superseded on <DefaultSupersededPrefix>.<collection>.<productType>
// naming the product it supersedes; when one arrives older than a version
// already known, a Superseded names the arrival itself. The notices are in
// the product stream beside the product events (which are never removed),
// outside the product subjects: a consumer of the product subjects never
// receives one. A consumer of the whole stream does, and Decode answers
// ErrNotice for it: ack it and go on, or read it with DecodeSuperseded.
//
// DefaultSupersededPrefix is the default of the receiver's
// RECEIVER_VERSIONS_SUBJECT_PREFIX: a second receiver on the same NATS
// (staging beside production) sets its own.
const DefaultSupersededPrefix = "cdse.superseded"

// Header names of a notice.
const (
	// HeaderNotice marks a message of the receiver's that is not a
	// product event; its value is the notice's kind (NoticeSuperseded).
	// Product events never carry it.
	HeaderNotice = "Cdse-Notice"
	// HeaderSupersededBy and HeaderSupersededByName are the id and name
	// of the product that supersedes the one named by HeaderProductID and
	// HeaderProductName.
	HeaderSupersededBy     = "Cdse-Superseded-By"
	HeaderSupersededByName = "Cdse-Superseded-By-Name"
	// HeaderSupersededReason is the notice's Reason.
	HeaderSupersededReason = "Cdse-Superseded-Reason"
)

// NoticeSuperseded is HeaderNotice's value, and the body's "notice", on a
// notice of supersession.
const NoticeSuperseded = "superseded"

// SupersededReason says how the receiver learnt that a product is
// superseded.
type SupersededReason string

// The reasons of a notice.
const (
	// NewerArrived: a newer version of the acquisition arrived; it
	// supersedes the latest one known until then.
	NewerArrived SupersededReason = "newer_arrived"
	// ArrivedOlder: the product arrived older than a version already
	// known (a late delivery, a backfill): superseded on arrival.
	ArrivedOlder SupersededReason = "arrived_older"
	// DeletedObsolete: the catalogue deleted the product as obsolete,
	// duplicated or reprocessed (its DeletionCause); By is the latest
	// version known of its acquisition.
	DeletedObsolete SupersededReason = "deleted_obsolete"
)

// ErrNotice is what Decode and DecodeData answer for a notice of the
// receiver's (a Superseded), which is not a product event: a consumer of
// the whole stream acks it and goes on. It is also ErrNotNotification, so
// a consumer written before notices existed, which skips what is not a
// notification, skips them.
var ErrNotice = fmt.Errorf("event: a notice of the receiver's, not a product event (%w)", ErrNotNotification)

// ErrNotSuperseded marks a message that is not a notice of supersession.
var ErrNotSuperseded = errors.New("event: not a notice of supersession")

// Superseded is a notice of supersession: the product Superseded is an
// older version of the acquisition By is a version of.
type Superseded struct {
	// Notice is NoticeSuperseded.
	Notice string           `json:"notice"`
	Reason SupersededReason `json:"reason"`
	// Acquisition is the two products' HeaderAcquisition.
	Acquisition string           `json:"acquisition"`
	Superseded  VersionedProduct `json:"superseded"`
	By          VersionedProduct `json:"by"`
	// DeletionCause is the catalogue's, with DeletedObsolete.
	DeletionCause string `json:"deletionCause,omitempty"`

	// ID is the notice's Nats-Msg-Id ("superseded:<Superseded.ID>:<By.ID>"):
	// each pair is announced once, whichever receiver replica saw it.
	ID string `json:"-"`
	// Collection and ProductType are the superseded product's subject
	// tokens (HeaderCollection, HeaderProductType).
	Collection  string `json:"-"`
	ProductType string `json:"-"`
}

// VersionedProduct is one product of a notice: its catalogue Id and Name,
// and its HeaderVersion.
type VersionedProduct struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// SupersededSubject is the subject of a notice about a product of
// collection and productType (subject tokens, as SanitizeToken makes
// them; UnknownToken when absent) under prefix.
func SupersededSubject(prefix, collection, productType string) string {
	return prefix + "." + orUnknown(SanitizeToken(collection)) + "." + orUnknown(SanitizeToken(productType))
}

func orUnknown(s string) string {
	if s == "" {
		return UnknownToken
	}
	return s
}

// SupersededMsgID is the Nats-Msg-Id of the notice that superseded is
// superseded by by (product ids).
func SupersededMsgID(superseded, by string) string {
	return NoticeSuperseded + ":" + superseded + ":" + by
}

// IsNotice says whether a message's headers mark it as a notice of the
// receiver's (not a product event): what a consumer of headers only checks.
func IsNotice(h nats.Header) bool {
	return h != nil && h.Get(HeaderNotice) != ""
}

// DecodeSuperseded reads a notice of supersession (jetstream.Msg is a Msg;
// for a *nats.Msg call DecodeSupersededData(m.Data, m.Header)).
func DecodeSuperseded(m Msg) (*Superseded, error) {
	return DecodeSupersededData(m.Data(), m.Headers())
}

// DecodeSupersededData reads a notice of supersession from its body and
// headers (h may be nil: the body says all but ID and the subject tokens).
func DecodeSupersededData(data []byte, h nats.Header) (*Superseded, error) {
	var s Superseded
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSuperseded, err)
	}
	switch {
	case s.Notice != NoticeSuperseded:
		return nil, fmt.Errorf("%w: notice %q", ErrNotSuperseded, s.Notice)
	case s.Superseded.ID == "" || s.By.ID == "":
		return nil, fmt.Errorf("%w: no product id", ErrNotSuperseded)
	}
	if h != nil {
		s.ID, s.Collection, s.ProductType = h.Get(HeaderMsgID), h.Get(HeaderCollection), h.Get(HeaderProductType)
	}
	return &s, nil
}
