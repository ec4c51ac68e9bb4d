package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The complete ranges (docs/consumers.md, "Waiting for a complete day"):
// for the product stream and for each interest, the receiver keeps per
// event a range [From, Until] in which every product event of that kind
// that matches the filter and that the catalogue lists with a date
// (PublicationDate, ModificationDate, DeletionDate) in the range is
// stored on its subjects. Each time Until advances, the receiver puts a
// Complete on <CompletePrefix>.<interest>.<event> in CompleteStream, which
// keeps the last message of each subject.
//
// CompletePrefix and CompleteStream are the defaults of the receiver's
// COMPLETE_SUBJECT_PREFIX and COMPLETE_STREAM: a second receiver on the
// same NATS (staging beside production) sets its own, and its consumers
// build their subjects with CompleteSubjectIn.
const (
	CompletePrefix = "cdse.complete"
	CompleteStream = "CDSE_COMPLETE"
	// CompleteProducts is the name the product stream's own range goes
	// by, in place of an interest's: no interest can take it (an
	// interest's name is [a-z0-9-]).
	CompleteProducts = "_products"
	// HeaderCompleteFrom and HeaderCompleteUntil repeat the body's From
	// and Until (RFC 3339, UTC), for readers of headers only.
	HeaderCompleteFrom  = "Cdse-Complete-From"
	HeaderCompleteUntil = "Cdse-Complete-Until"
)

// CompleteSubject is the subject of an interest's (or CompleteProducts')
// complete range of an event under the default prefix:
// cdse.complete.l2a-alps.created.
func CompleteSubject(interest string, ev Kind) string {
	return CompleteSubjectIn(CompletePrefix, interest, ev)
}

// CompleteSubjectIn is CompleteSubject under a receiver's
// COMPLETE_SUBJECT_PREFIX: CompleteSubjectIn("staging.complete",
// "l2a-alps", Created) is staging.complete.l2a-alps.created.
func CompleteSubjectIn(prefix, interest string, ev Kind) string {
	return prefix + "." + interest + "." + string(ev)
}

// Complete is a complete range as announced: every product event of kind
// Event that matches Interest's filter and that the catalogue lists with
// its date in [From, Until] is stored on Interest's subjects (the product
// subjects for CompleteProducts).
type Complete struct {
	Interest string    `json:"interest"`
	Event    Kind      `json:"event"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until"`
}

// Covers says whether the range holds t: "run yesterday's mosaic once
// Covers(midnight)".
func (c *Complete) Covers(t time.Time) bool {
	return !t.Before(c.From) && !t.After(c.Until)
}

// ErrNotComplete marks a message that is not a complete range.
var ErrNotComplete = errors.New("event: not a complete range")

// DecodeComplete reads a message of CompleteStream (jetstream.Msg is a
// Msg; for a *nats.Msg call DecodeCompleteData(m.Data, m.Header)).
func DecodeComplete(m Msg) (*Complete, error) {
	return DecodeCompleteData(m.Data(), m.Headers())
}

// DecodeCompleteData reads a complete range from its body (the headers
// are not needed; they repeat the body).
func DecodeCompleteData(data []byte, _ nats.Header) (*Complete, error) {
	var c Complete
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotComplete, err)
	}
	switch {
	case c.Interest == "" || strings.ContainsAny(c.Interest, ". *>"):
		return nil, fmt.Errorf("%w: interest %q", ErrNotComplete, c.Interest)
	case c.Event != Created && c.Event != Modified && c.Event != Deleted:
		return nil, fmt.Errorf("%w: event %q", ErrNotComplete, c.Event)
	case c.From.IsZero() || c.Until.Before(c.From):
		return nil, fmt.Errorf("%w: range [%s, %s]", ErrNotComplete, c.From.Format(time.RFC3339), c.Until.Format(time.RFC3339))
	}
	return &c, nil
}
