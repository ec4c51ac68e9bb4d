package event

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Subjects and stream of the fetcher's events unless its FETCH_FETCHED_PREFIX,
// FETCH_FAILED_PREFIX and FETCH_STREAM say otherwise. The fetched subjects
// have the layout of DefaultTemplate (event.collection.productType), so
// Filter{Prefix: DefaultFetchedPrefix, ...}.Subject() selects them; the
// failed subjects have collection.productType.
const (
	DefaultFetchedPrefix = "cdse.fetched"
	DefaultFailedPrefix  = "cdse.fetchfailed"
	DefaultFetchedStream = "CDSE_FETCHED"
	// FetchRetryPrefix starts the subjects `fetcher failed retry` puts a
	// given-up product event back on, in the product stream:
	// <FetchRetryPrefix>.<stream>.<consumer>.<collection>.<productType>
	// (FetchRetrySubjects), which only that fetcher consumer filters
	// (consumers of the product subjects never see them).
	FetchRetryPrefix = "cdse.fetchretry"
)

// FetchRetrySubjects are the retry subjects of the product stream named
// stream, under which each fetcher consumer has <consumer>.>: the stream's
// name is in them so that two receivers with two product streams can
// share one NATS (a subject can be in one stream only).
func FetchRetrySubjects(stream string) string {
	return FetchRetryPrefix + "." + stream
}

// Header names the fetcher adds to its events, beside the product's Cdse-*
// headers copied from the product message.
const (
	// HeaderObjectURL is where the object is: s3://bucket/key or
	// file:///dir/key.
	HeaderObjectURL = "Cdse-Object-Url"
	// HeaderVerifiedInPlace is "true" on the fetched event of a product
	// stored unverified whose checksum came later: the fetcher read the
	// stored object back and verified it there, downloading nothing.
	HeaderVerifiedInPlace = "Cdse-Verified-In-Place"
	// HeaderObjectSize is the object's size in bytes (decimal).
	HeaderObjectSize = "Cdse-Object-Size"
	// HeaderChecksumPrefix + the algorithm in upper case (MD5, BLAKE3): a
	// checksum the stored bytes were verified against, in lower-case hex.
	HeaderChecksumPrefix = "Cdse-Checksum-"
	// HeaderUnverified says why no checksum verified the bytes (the
	// catalogue gave none, for one); absent when one did.
	HeaderUnverified = "Cdse-Unverified"
	// HeaderFetchTook is how long the fetch took, as time.Duration writes
	// it ("1.235s").
	HeaderFetchTook = "Cdse-Fetch-Took"
	// HeaderFetchError is why a product event was given up (failed events
	// only).
	HeaderFetchError = "Cdse-Fetch-Error"
	// HeaderFetchRetry is on a product event put back by `fetcher failed
	// retry` and on the events of its new fetch: the sequence of the
	// failed event it came from.
	HeaderFetchRetry = "Cdse-Fetch-Retry"
	// HeaderObjectUnchanged is "true" when the object was already stored
	// with the same size and checksums, so nothing was downloaded (a
	// modified event whose bytes did not change, a second delivery): a
	// pipeline that already processed the object may skip it.
	HeaderObjectUnchanged = "Cdse-Object-Unchanged"

	// A product stored as a folder of some of its files (FETCH_FILES, an
	// interest's files:) rather than its archive: HeaderObjectURL is the
	// folder's, ending in "/" (<key without .zip>/), HeaderObjectSize the
	// bytes of its files and manifest, and no HeaderChecksumPrefix header
	// is set (each file was verified against the product's manifest).
	//
	// HeaderFetchMode is "files" then; "archive" when files were asked
	// for but the product has none to select from (no manifest:
	// HeaderFilesFallback says so) and the archive was stored; absent
	// when no files were asked for.
	HeaderFetchMode = "Cdse-Fetch-Mode"
	// HeaderVerifiedAgainst is "manifest": each file's size and checksum
	// (MD5, or SHA3-256 for Sentinel-2) were those its manifest lists.
	HeaderVerifiedAgainst = "Cdse-Verified-Against"
	// HeaderFileCount is the number of files selected and stored, the
	// manifest not counted (decimal).
	HeaderFileCount = "Cdse-File-Count"
	// HeaderFetchedBytes are the bytes this fetch downloaded: the
	// manifest and the files not already stored (decimal).
	HeaderFetchedBytes = "Cdse-Fetched-Bytes"
	// HeaderArchiveSize is the size of the product's archive, which was
	// not downloaded (decimal; absent when unknown).
	HeaderArchiveSize = "Cdse-Archive-Size"
	// HeaderFilesFallback says why the archive was stored although files
	// were asked for.
	HeaderFilesFallback = "Cdse-Files-Fallback"

	// HeaderSkipped is on the fetched event of a product the fetcher did
	// not download (FETCH_VERSIONS=latest): why, "superseded by <id>
	// (<name>)". Such an event has no HeaderObjectURL: nothing is stored.
	// HeaderSupersededBy and HeaderSupersededByName name the product
	// that supersedes it, as on a notice; they are also on the event of a
	// superseded product removed from the target (FETCH_ON_SUPERSEDED=
	// delete).
	HeaderSkipped = "Cdse-Skipped"
)

// FetchModeFiles is HeaderFetchMode of a product stored as a folder of
// some of its files; FetchModeArchive of one whose archive was stored
// although files were asked for.
const (
	FetchModeFiles   = "files"
	FetchModeArchive = "archive"
)

// FetchedFiles is what a fetched event of a product stored as a folder of
// some of its files says of them.
type FetchedFiles struct {
	// Count is the number of files stored, the manifest not counted.
	Count int
	// FetchedBytes are the bytes downloaded; ArchiveSize the archive's
	// (0 unknown), not downloaded.
	FetchedBytes, ArchiveSize int64
	// VerifiedAgainst is "manifest".
	VerifiedAgainst string
}

// ErrNotFetched marks a message that is not a fetched event.
var ErrNotFetched = errors.New("event: not a fetched event")

// ErrSkipped marks the fetched event of a product the fetcher skipped
// (HeaderSkipped): nothing was stored. It is also ErrNotFetched, so a
// consumer that opens the object of each fetched event, and terminates
// what is not one, goes on as before; DecodeSkipped reads it.
var ErrSkipped = fmt.Errorf("event: a product the fetcher skipped, nothing stored (%w)", ErrNotFetched)

// ErrNotFailed marks a message that is not a failed event.
var ErrNotFailed = errors.New("event: not a failed event")

// Fetched is one product stored by the fetcher (or removed from its target:
// Deleted). The embedded Notification is the product event, decoded as
// Decode decodes it; its ID is the fetched event's Nats-Msg-Id, not the
// product message's.
type Fetched struct {
	*Notification
	// ObjectURL is where the object is (or was, when Deleted):
	// s3://bucket/key or file:///dir/key.
	ObjectURL string
	// Size is the object's size in bytes; 0 when Deleted.
	Size int64
	// Checksums are those the stored bytes were verified against, by
	// algorithm in upper case ("MD5", "BLAKE3"), each in lower-case hex;
	// empty when none did (Unverified says why).
	Checksums map[string]string
	// Unverified is why no checksum verified the bytes; "" when one did.
	Unverified string
	// Took is how long the fetch took, to the millisecond; 0 when Deleted.
	Took time.Duration
	// Deleted is set on the event of a deleted product the fetcher
	// removed from its target: the message carries the object's URL only.
	Deleted bool
	// Unchanged is set when the object was already stored with the same
	// size and checksums and nothing was downloaded (HeaderObjectUnchanged).
	Unchanged bool
	// StacItem is the STAC item the fetcher wrote beside the object
	// (HeaderStacItem); "" when it writes none (FETCH_STAC=false, a
	// deleted product).
	StacItem string
	// VerifiedInPlace is set when a product stored unverified was
	// verified where it is, its checksum known since
	// (HeaderVerifiedInPlace).
	VerifiedInPlace bool
	// Files is set when the product was stored as a folder of some of
	// its files (HeaderFetchMode "files"): ObjectURL is the folder's.
	Files *FetchedFiles
	// FilesFallback is why the archive was stored although files were
	// asked for (HeaderFilesFallback); "" otherwise.
	FilesFallback string
	// Superseded is set, with Deleted, on the event of a superseded
	// product the fetcher removed from its target (FETCH_ON_SUPERSEDED=
	// delete): the receiver's notice that named it, which is the event's
	// body. The Notification is then made of the notice and the headers
	// (ProductID, ProductName, Collection, ProductType, Acquisition; Event
	// Deleted): the catalogue did not delete the product.
	Superseded *Superseded
}

// Verified reports whether at least one checksum verified the stored bytes:
// the catalogue's of the archive, or the manifest's of every file of a
// folder.
func (f *Fetched) Verified() bool {
	return len(f.Checksums) > 0 || (f.Files != nil && f.Files.VerifiedAgainst != "" && f.Unverified == "")
}

// DecodeFetched reads a message of the fetcher's stream on a fetched
// subject: jetstream.Msg is a Msg. For a core *nats.Msg, call
// DecodeFetchedData(m.Data, m.Header).
func DecodeFetched(m Msg) (*Fetched, error) {
	return DecodeFetchedData(m.Data(), m.Headers())
}

// DecodeFetchedData reads a fetched event's data and headers. It fails,
// wrapping ErrNotFetched, when the body is not a notification (the error
// wraps ErrNotNotification too), when HeaderObjectURL is missing, when
// HeaderObjectSize is missing (except on a deleted product's event) or not
// a byte count, and when HeaderFetchTook is not a duration; wrapping
// ErrSkipped too for a product the fetcher skipped (HeaderSkipped). The
// event of a superseded product removed from the target, whose body is the
// receiver's notice, is a Deleted one with Superseded set.
func DecodeFetchedData(data []byte, h nats.Header) (*Fetched, error) {
	if why := h.Get(HeaderSkipped); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrSkipped, why)
	}
	n, err := DecodeData(data, h)
	if errors.Is(err, ErrNotice) && h.Get(HeaderObjectURL) != "" {
		return supersededRemoved(data, h)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: its body: %w", ErrNotFetched, err)
	}
	f := &Fetched{Notification: n, Deleted: n.Event == Deleted, StacItem: h.Get(HeaderStacItem),
		VerifiedInPlace: h.Get(HeaderVerifiedInPlace) == "true"}
	if f.ObjectURL = h.Get(HeaderObjectURL); f.ObjectURL == "" {
		return nil, fmt.Errorf("%w: no %s header", ErrNotFetched, HeaderObjectURL)
	}
	switch size := h.Get(HeaderObjectSize); {
	case size == "" && !f.Deleted:
		return nil, fmt.Errorf("%w: no %s header", ErrNotFetched, HeaderObjectSize)
	case size != "":
		if f.Size, err = strconv.ParseInt(size, 10, 64); err != nil {
			return nil, fmt.Errorf("%w: %s %q is not a byte count: %w", ErrNotFetched, HeaderObjectSize, size, err)
		}
		if f.Size < 0 {
			return nil, fmt.Errorf("%w: %s %q is negative", ErrNotFetched, HeaderObjectSize, size)
		}
	}
	for k, v := range h {
		if len(k) > len(HeaderChecksumPrefix) && strings.EqualFold(k[:len(HeaderChecksumPrefix)], HeaderChecksumPrefix) && len(v) > 0 && v[0] != "" {
			if f.Checksums == nil {
				f.Checksums = map[string]string{}
			}
			f.Checksums[strings.ToUpper(k[len(HeaderChecksumPrefix):])] = strings.ToLower(v[0])
		}
	}
	f.Unverified = h.Get(HeaderUnverified)
	f.Unchanged = h.Get(HeaderObjectUnchanged) == "true"
	if took := h.Get(HeaderFetchTook); took != "" {
		if f.Took, err = time.ParseDuration(took); err != nil {
			return nil, fmt.Errorf("%w: %s %q is not a duration: %w", ErrNotFetched, HeaderFetchTook, took, err)
		}
	}
	f.FilesFallback = h.Get(HeaderFilesFallback)
	if h.Get(HeaderFetchMode) == FetchModeFiles {
		ff := &FetchedFiles{VerifiedAgainst: h.Get(HeaderVerifiedAgainst)}
		for _, c := range []struct {
			name string
			dst  *int64
		}{{HeaderFetchedBytes, &ff.FetchedBytes}, {HeaderArchiveSize, &ff.ArchiveSize}} {
			if v := h.Get(c.name); v != "" {
				if *c.dst, err = strconv.ParseInt(v, 10, 64); err != nil || *c.dst < 0 {
					return nil, fmt.Errorf("%w: %s %q is not a byte count", ErrNotFetched, c.name, v)
				}
			}
		}
		if v := h.Get(HeaderFileCount); v != "" {
			if ff.Count, err = strconv.Atoi(v); err != nil || ff.Count < 0 {
				return nil, fmt.Errorf("%w: %s %q is not a count", ErrNotFetched, HeaderFileCount, v)
			}
		}
		f.Files = ff
	}
	return f, nil
}

// supersededRemoved reads the event of a superseded product removed from
// the target: its body is the notice that named it.
func supersededRemoved(data []byte, h nats.Header) (*Fetched, error) {
	s, err := DecodeSupersededData(data, h)
	if err != nil {
		return nil, fmt.Errorf("%w: its body: %w", ErrNotFetched, err)
	}
	s.ID = SupersededMsgID(s.Superseded.ID, s.By.ID) // the notice's, not this event's
	n := &Notification{Event: Deleted, ID: h.Get(HeaderMsgID), ProductID: s.Superseded.ID, ProductName: s.Superseded.Name,
		Collection: s.Collection, ProductType: s.ProductType, Acquisition: s.Acquisition, Version: s.Superseded.Version,
		Interest: h.Get(HeaderInterest), Data: data, Attributes: map[string]Attribute{}}
	return &Fetched{Notification: n, ObjectURL: h.Get(HeaderObjectURL), Deleted: true, Superseded: s}, nil
}

// Skipped is the fetched event of a product the fetcher did not download
// (HeaderSkipped): the product event, and why.
type Skipped struct {
	*Notification
	// Reason is HeaderSkipped: "superseded by <id> (<name>)".
	Reason string
	// SupersededBy is the product that supersedes it (HeaderSupersededBy,
	// HeaderSupersededByName; no Version).
	SupersededBy VersionedProduct
}

// DecodeSkipped reads the fetched event of a product the fetcher skipped
// (DecodeFetched answers ErrSkipped for it); for a core *nats.Msg call
// DecodeSkippedData(m.Data, m.Header).
func DecodeSkipped(m Msg) (*Skipped, error) { return DecodeSkippedData(m.Data(), m.Headers()) }

// DecodeSkippedData reads a skipped product's fetched event from its body
// (the product event's notification) and headers. It fails, wrapping
// ErrNotFetched, when HeaderSkipped is missing or the body is not a
// notification.
func DecodeSkippedData(data []byte, h nats.Header) (*Skipped, error) {
	why := h.Get(HeaderSkipped)
	if why == "" {
		return nil, fmt.Errorf("%w: no %s header", ErrNotFetched, HeaderSkipped)
	}
	n, err := DecodeData(data, h)
	if err != nil {
		return nil, fmt.Errorf("%w: its body: %w", ErrNotFetched, err)
	}
	return &Skipped{Notification: n, Reason: why,
		SupersededBy: VersionedProduct{ID: h.Get(HeaderSupersededBy), Name: h.Get(HeaderSupersededByName)}}, nil
}

// Failed is one product event the fetcher gave up (after its attempts, or
// at once for a permanent error: offline, not found, checksum mismatch,
// an undecodable body).
type Failed struct {
	// Notification is the product event given up; nil when its body is not
	// a notification (DecodeErr says why; Data holds it).
	Notification *Notification
	// DecodeErr is why Notification is nil (it wraps ErrNotNotification).
	DecodeErr error
	// ProductID is the notification's product id, or the Cdse-Product-Id
	// header's when the body did not decode; "" when neither says.
	ProductID string
	// Reason is why the fetcher gave up (HeaderFetchError).
	Reason string
	// ID is the failed event's Nats-Msg-Id.
	ID string
	// Data is the product message's body, as stored.
	Data []byte
}

// DecodeFailed reads a message of the fetcher's stream on a failed subject:
// jetstream.Msg is a Msg. For a core *nats.Msg, call
// DecodeFailedData(m.Data, m.Header).
func DecodeFailed(m Msg) (*Failed, error) {
	return DecodeFailedData(m.Data(), m.Headers())
}

// DecodeFailedData reads a failed event's data and headers. It fails,
// wrapping ErrNotFailed, only when HeaderFetchError is missing: a body that
// is not a notification is what some failed events are about, so it is
// kept in Data and said in DecodeErr.
func DecodeFailedData(data []byte, h nats.Header) (*Failed, error) {
	if h.Values(HeaderFetchError) == nil {
		return nil, fmt.Errorf("%w: no %s header", ErrNotFailed, HeaderFetchError)
	}
	f := &Failed{Reason: h.Get(HeaderFetchError), ID: h.Get(HeaderMsgID), Data: data}
	f.Notification, f.DecodeErr = DecodeData(data, h)
	if f.Notification != nil {
		f.ProductID = f.Notification.ProductID
	} else {
		f.ProductID = h.Get(HeaderProductID)
	}
	return f, nil
}
