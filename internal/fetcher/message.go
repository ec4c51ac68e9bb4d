package fetcher

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
)

// body is what the fetcher reads of a notification beyond the event
// package: the catalogue's checksums.
type body struct {
	Value *struct {
		Checksum []struct{ Value, Algorithm string }
	} `json:"value"`
}

// ProductOf is the engine's view of the product of n: the notification's
// length, online flag and checksums (an unreadable or absent list leaves
// the engine to read the catalogue's entity).
func ProductOf(n *event.Notification) fetch.Product {
	p := fetch.Product{ID: n.ProductID, Name: n.ProductName, ContentLength: n.ContentLength, Online: n.Online}
	var b body
	if json.Unmarshal(n.Data, &b) == nil && b.Value != nil {
		for _, c := range b.Value.Checksum {
			if c.Value != "" && c.Algorithm != "" {
				p.Checksums = append(p.Checksums, fetch.Checksum{Algorithm: c.Algorithm, Value: c.Value})
			}
		}
	}
	return p
}

// token is s as one subject token, UNKNOWN when blank, as the receiver's
// subjects have it.
func token(s string) string {
	if s = event.SanitizeToken(s); s == "" {
		return event.UnknownToken
	}
	return s
}

// Key is the object key of n by the template (fetchconfig.CheckKeyTemplate
// has checked it): the date is the sensing start, or the publication date
// when the notification has none, in UTC. The collection and product type
// are subject tokens (no "/" nor ".."); the name is the product's, which
// the engine refuses when unsafe.
func Key(template string, n *event.Notification) string {
	at := n.ContentStart
	if at.IsZero() {
		at = n.PublicationDate
	}
	at = at.UTC()
	yyyy, mm, dd := "0000", "00", "00"
	if !at.IsZero() {
		yyyy, mm, dd = at.Format("2006"), at.Format("01"), at.Format("02")
	}
	return strings.NewReplacer(
		"{collection}", token(n.Collection),
		"{productType}", token(n.ProductType),
		"{yyyy}", yyyy, "{mm}", mm, "{dd}", dd,
		"{name}", n.ProductName,
		"{id}", n.ProductID,
	).Replace(template)
}

// routing copies the product's Cdse-* headers of the product message.
func routing(h nats.Header) nats.Header {
	out := nats.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Cdse-") {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// fetchedMsg is the event of a product stored: the notification as its
// body (event.Decode reads it as a product event), the product's headers,
// and where and how it was stored. Its Nats-Msg-Id makes a redelivered
// product event (a crash between the PubAck and the ack) publish nothing
// new: the same consumer, product, event and bytes.
func fetchedMsg(prefix, consumer string, n *event.Notification, h nats.Header, r fetch.Result, item string) *nats.Msg {
	out := routing(h)
	if item != "" {
		out.Set(event.HeaderStacItem, item)
	}
	out.Set(event.HeaderObjectURL, r.URL)
	out.Set(event.HeaderObjectSize, fmt.Sprint(r.Size))
	ident := fmt.Sprint(r.Size)
	for _, c := range r.Verified {
		out.Set(event.HeaderChecksumPrefix+strings.ToUpper(c.Algorithm), strings.ToLower(c.Value))
		if ident == fmt.Sprint(r.Size) {
			ident = strings.ToLower(c.Value)
		}
	}
	switch {
	case r.Files != nil && r.Files.Fallback == "":
		// A folder of some of the product's files, each verified
		// against the manifest (fetch/files.go).
		out.Set(event.HeaderFetchMode, event.FetchModeFiles)
		out.Set(event.HeaderVerifiedAgainst, "manifest")
		out.Set(event.HeaderFileCount, fmt.Sprint(len(r.Files.Files)))
		out.Set(event.HeaderFetchedBytes, fmt.Sprint(r.Files.Fetched))
		if r.Files.ArchiveSize > 0 {
			out.Set(event.HeaderArchiveSize, fmt.Sprint(r.Files.ArchiveSize))
		}
		if r.Unverified != "" {
			out.Set(event.HeaderUnverified, r.Unverified)
		}
		ident = "files-" + r.Files.Digest
	case len(r.Verified) == 0:
		why := r.Unverified
		if why == "" {
			why = "no checksum"
		}
		out.Set(event.HeaderUnverified, why)
	}
	if r.Files != nil && r.Files.Fallback != "" {
		out.Set(event.HeaderFetchMode, event.FetchModeArchive)
		out.Set(event.HeaderFilesFallback, r.Files.Fallback)
	}
	if r.AlreadyThere {
		out.Set(event.HeaderObjectUnchanged, "true")
	}
	if r.VerifiedInPlace {
		out.Set(event.HeaderVerifiedInPlace, "true")
	}
	out.Set(event.HeaderFetchTook, r.Took.Round(time.Millisecond).String())
	// The product event's own id (the receiver's dedupe key: event,
	// product, ModificationDate) names it: a redelivery publishes the
	// same id, which the stream drops, but a second modified event of
	// the same bytes is an event of its own, with its own outcome.
	src := h.Get(event.HeaderMsgID)
	if src == "" {
		src = n.ProductID + "/" + string(n.Event)
	}
	out.Set(event.HeaderMsgID, "fetched/"+consumer+"/"+src+"/"+ident)
	return &nats.Msg{
		Subject: prefix + "." + token(string(n.Event)) + "." + token(n.Collection) + "." + token(n.ProductType),
		Header:  out,
		Data:    n.Data,
	}
}

// deletedMsg is the event of a product removed from the target
// (FETCH_ON_DELETE=delete).
func deletedMsg(prefix, consumer string, n *event.Notification, h nats.Header, url string) *nats.Msg {
	out := routing(h)
	out.Set(event.HeaderObjectURL, url)
	out.Set(event.HeaderMsgID, "fetched/"+consumer+"/"+n.ProductID+"/"+string(n.Event))
	return &nats.Msg{
		Subject: prefix + "." + token(string(n.Event)) + "." + token(n.Collection) + "." + token(n.ProductType),
		Header:  out,
		Data:    n.Data,
	}
}

// failedMsg is the event of a product event given up: the original
// notification and why. Its id is the product message's stream sequence,
// so a redelivery after a crash publishes it once.
func failedMsg(prefix, consumer string, collection, productType string, data []byte, h nats.Header, seq uint64, reason string) *nats.Msg {
	out := routing(h)
	out.Set(event.HeaderFetchError, reason)
	out.Set(event.HeaderMsgID, fmt.Sprintf("failed/%s/%d", consumer, seq))
	return &nats.Msg{
		Subject: prefix + "." + token(collection) + "." + token(productType),
		Header:  out,
		Data:    data,
	}
}

// skippedMsg is the fetched event of a product not downloaded because it
// is superseded by by (FETCH_VERSIONS=latest): the notification as its
// body, the product's headers, why (event.HeaderSkipped) and no object.
// It is one event per product event, as a fetched one is.
func skippedMsg(prefix, consumer string, n *event.Notification, h nats.Header, by event.VersionedProduct) *nats.Msg {
	out := routing(h)
	out.Set(event.HeaderSkipped, "superseded by "+byName(by))
	out.Set(event.HeaderSupersededBy, by.ID)
	if by.Name != "" {
		out.Set(event.HeaderSupersededByName, by.Name)
	}
	src := h.Get(event.HeaderMsgID)
	if src == "" {
		src = n.ProductID + "/" + string(n.Event)
	}
	out.Set(event.HeaderMsgID, "fetched/"+consumer+"/"+src+"/skipped")
	return &nats.Msg{
		Subject: prefix + "." + token(string(n.Event)) + "." + token(n.Collection) + "." + token(n.ProductType),
		Header:  out,
		Data:    n.Data,
	}
}

// supersededMsg is the event of a superseded product removed from the
// target (FETCH_ON_SUPERSEDED=delete): on the fetched subject of a
// deletion, the receiver's notice as its body, its headers (the
// superseded product's, and the one that supersedes it) but the one that
// marks a notice, and the object's URL. One per pair, as the notice.
func supersededMsg(prefix, consumer string, s *event.Superseded, notice []byte, h nats.Header, url string) *nats.Msg {
	out := routing(h)
	out.Del(event.HeaderNotice)
	out.Set(event.HeaderObjectURL, url)
	out.Set(event.HeaderMsgID, "fetched/"+consumer+"/superseded/"+s.Superseded.ID+"/"+s.By.ID)
	return &nats.Msg{
		Subject: prefix + "." + token(string(event.Deleted)) + "." + token(s.Collection) + "." + token(s.ProductType),
		Header:  out,
		Data:    notice,
	}
}
