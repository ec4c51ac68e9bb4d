package notification

import (
	"errors"

	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// Entity says where the members of a product entity lie, as offsets into
// the entity (Notification.Value). Evaluating 20 interests read each 7 KB
// entity again from its first byte, at 12 % of the receiver's CPU under
// load; the validating walk passes every member anyway, and noting where
// costs next to nothing (bench/RESULTS.md, "named interests").
type Entity struct {
	Members [NumMembers]Span // by Member; the zero Span when absent
	// Attributes are the objects of the Attributes array, in order.
	Attributes []AttributeSpans
}

// Span is a member's value, Value[Start:End]; End is 0 when absent.
type Span struct{ Start, End int32 }

// Bytes is the value within the entity, nil when absent.
func (s Span) Bytes(entity []byte) []byte {
	if s.End == 0 {
		return nil
	}
	return entity[s.Start:s.End]
}

// AttributeSpans are the members of one attribute object.
type AttributeSpans struct{ Name, Value, ValueType, ODataType Span }

// Member is a property of a product entity that a filter can name.
type Member uint8

// The members an Entity notes.
const (
	MemberID Member = iota
	MemberName
	MemberContentLength
	MemberOriginDate
	MemberPublicationDate
	MemberModificationDate
	MemberDeletionDate
	MemberDeletionCause
	MemberOnline
	MemberContentDate
	MemberFootprint
	MemberGeoFootprint
	NumMembers
)

// memberOf is the Member a member name is, if an Entity notes it.
func memberOf(name string) (Member, bool) {
	switch name {
	case "Id":
		return MemberID, true
	case "Name":
		return MemberName, true
	case "ContentLength":
		return MemberContentLength, true
	case "OriginDate":
		return MemberOriginDate, true
	case "PublicationDate":
		return MemberPublicationDate, true
	case "ModificationDate":
		return MemberModificationDate, true
	case "DeletionDate":
		return MemberDeletionDate, true
	case "DeletionCause":
		return MemberDeletionCause, true
	case "Online":
		return MemberOnline, true
	case "ContentDate":
		return MemberContentDate, true
	case "Footprint":
		return MemberFootprint, true
	case "GeoFootprint":
		return MemberGeoFootprint, true
	}
	return 0, false
}

// ErrNotEntity is returned by ReadEntity for input that is not one JSON
// object.
var ErrNotEntity = errors.New("not a product entity (a JSON object)")

// ReadEntity notes the members of a product entity that is not part of a
// notification (a product given to interests check) by the same walk Parse
// reads a notification's value with. raw must be valid JSON; a member of an
// unexpected type is noted all the same (the reader decides what it can
// use).
func ReadEntity(raw []byte) (Entity, error) {
	var n Notification
	end, _ := n.readProduct(raw, 0, true) // a member the receiver would refuse is still one to read
	if end < 0 || jsonscan.SkipSpace(raw, end) != len(raw) {
		return Entity{}, ErrNotEntity
	}
	return n.Entity, nil
}

// maxEntity is the longest entity whose offsets an int32 holds.
const maxEntity = 1<<31 - 1

// spanAt is raw[v:e] as a Span of an entity that starts at base.
// readProduct refuses an entity too long for an int32 offset (maxEntity),
// whatever its source: webhook bodies are capped far below
// (RECEIVER_MAX_BODY), but PULL, the reconciler and interests check read
// theirs elsewhere.
func spanAt(v, e, base int) Span { return Span{int32(v - base), int32(e - base)} }
