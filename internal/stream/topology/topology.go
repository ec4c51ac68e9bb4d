// Package topology declares every JetStream resource the receiver uses and
// is their one owner: the product stream, the quarantine stream, the state
// bucket (reconcile watermarks, backfill checkpoints), the reconcile
// lease bucket and the versions bucket (the latest versions per
// acquisition). The server and the one-shot commands create, update and
// open them only through it, so their names and settings are written once.
package topology

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

// Options are the settings of the resources (from the receiver's
// configuration).
type Options struct {
	// Stream is the product stream; it captures <SubjectPrefix>.>.
	Stream        string
	SubjectPrefix string
	// InterestPrefix, when set, is captured by the product stream too
	// (<InterestPrefix>.>): the interests' copies.
	InterestPrefix string
	// Replicas of every stream and bucket (1 with the embedded server).
	Replicas int
	// Duplicates is JetStream's duplicate window: a Nats-Msg-Id seen within
	// it is acknowledged as a duplicate and not stored again. The server
	// keeps the ids of this window in memory.
	Duplicates time.Duration
	MaxAge     time.Duration // 0: no limit
	MaxBytes   int64         // 0: no limit
	// The quarantine of refused bodies: its stream captures
	// <QuarantinePrefix>.>.
	QuarantineStream   string
	QuarantinePrefix   string
	QuarantineMaxAge   time.Duration
	QuarantineMaxBytes int64
	// The complete ranges' announcements (internal/stream/complete): the stream
	// captures <CompletePrefix>.> and records Stream as its owner
	// (EnsureOwned). Empty: event.CompleteStream and event.CompletePrefix,
	// the settings' defaults (Options made by hand, in tests and tools).
	CompleteStream string
	CompletePrefix string
	// SupersededPrefix, when set, is captured by the product stream too
	// (<SupersededPrefix>.>): the notices of supersession
	// (internal/stream/supersede). Empty: no notices.
	SupersededPrefix string
}

// PlannedPrefixes are the subject prefixes of the streams of the
// receiver's other stages that the receiver's configuration does not
// name: the fetcher's products fetched (cdse.fetched.>) and failed
// fetches (cdse.fetchfailed.>), and its retries; and the default of the
// notices of supersession (event.DefaultSupersededPrefix), reserved
// whatever RECEIVER_VERSIONS_SUBJECT_PREFIX says. They are written here,
// once, so that the embedded server denies consumers publishing to them
// without a second change to its permissions that could be forgotten: the
// fetcher's settings default to these names. The complete ranges' and the
// notices' prefixes are settings of the receiver's
// (COMPLETE_SUBJECT_PREFIX, RECEIVER_VERSIONS_SUBJECT_PREFIX), denied as
// configured too.
var PlannedPrefixes = []string{"cdse.fetched", "cdse.fetchfailed", RetryPrefix, event.DefaultSupersededPrefix}

// RetryPrefix is the subjects of the product stream where `fetcher failed
// retry` puts a given-up product event back for the fetcher's consumer
// alone (event.FetchRetryPrefix; the stream takes <RetryPrefix>.<its
// name>.>): the product stream takes them so that that one consumer, whose
// MaxAckPending is the account's download cap, serves retries and products
// together.
const RetryPrefix = "cdse.fetchretry"

// productSubjects are the product stream's subjects: the products, the
// interests' copies, the fetcher's retries of this stream,
// <RetryPrefix>.<stream>.>, and the notices of supersession (each unless a
// subject listed before already covers it, which a stream cannot list
// twice).
func (o Options) productSubjects() []string {
	subjects := []string{o.SubjectPrefix + ".>"}
	if o.InterestPrefix != "" {
		subjects = append(subjects, o.InterestPrefix+".>")
	}
	for _, s := range []string{event.FetchRetrySubjects(o.Stream) + ".>", o.noticeSubjects()} {
		if s != "" && !covered(subjects, s) {
			subjects = append(subjects, s)
		}
	}
	return subjects
}

// noticeSubjects are the notices' subjects, "" without notices.
func (o Options) noticeSubjects() string {
	if o.SupersededPrefix == "" {
		return ""
	}
	return o.SupersededPrefix + ".>"
}

// covered says whether one of subjects takes every subject of s.
func covered(subjects []string, s string) bool {
	return slices.ContainsFunc(subjects, func(have string) bool { return event.SubjectCovers(have, s) })
}

// Topology is the receiver's resources on one JetStream context.
type Topology struct {
	js jetstream.JetStream
	o  Options
}

// New binds the resources of o to js.
func New(js jetstream.JetStream, o Options) *Topology {
	return &Topology{js: js, o: o}
}

// JetStream is the context the resources live on.
func (t *Topology) JetStream() jetstream.JetStream { return t.js }

// ProductStream is the product stream's name.
func (t *Topology) ProductStream() string { return t.o.Stream }

// QuarantineStream is the quarantine stream's name.
func (t *Topology) QuarantineStream() string { return t.o.QuarantineStream }

// QuarantineSubject is the subject of a body refused from source.
func (t *Topology) QuarantineSubject(source string) string {
	return t.o.QuarantinePrefix + "." + source
}

// StateBucket and LeaseBucket are the buckets' names, derived from the
// product stream's so that two receivers on one cluster (two streams)
// never share them.
func (t *Topology) StateBucket() string { return t.o.Stream + "_STATE" }

// LeaseBucket: see StateBucket.
func (t *Topology) LeaseBucket() string { return t.o.Stream + "_STATE_LEASE" }

// EnsureProduct creates the product stream, or updates an existing one
// compatibly: our subjects are added to the ones it has, and the duplicate
// window, replicas and limits we own are set. Storage and retention an
// operator chose are kept; a stream on memory storage is refused, since a
// 2xx must survive a server restart.
//
// The products come first: when the notices' subjects are another
// stream's (a second receiver on the same NATS that kept the default
// RECEIVER_VERSIONS_SUBJECT_PREFIX), the stream is made without them, and
// NoticesTaken says why the notices are off.
func (t *Topology) EnsureProduct(ctx context.Context) (*jetstream.StreamInfo, error) {
	subjects := t.o.productSubjects()
	info, err := t.ensureProduct(ctx, subjects)
	if notices := t.o.noticeSubjects(); notices != "" && errors.Is(err, errOverlap) && slices.Contains(subjects, notices) {
		if info, err2 := t.ensureProduct(ctx, slices.DeleteFunc(slices.Clone(subjects), func(s string) bool { return s == notices })); err2 == nil {
			return info, nil
		}
	}
	return info, err
}

// errOverlap marks subjects another stream takes.
var errOverlap = errors.New("subjects another stream of this NATS takes")

// overlapError is err, marked errOverlap when JetStream refused subjects
// that another stream takes.
func overlapError(err error) error {
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == errSubjectsOverlap {
		return fmt.Errorf("%w (%w): a second receiver on this NATS needs prefixes of its own (NATS_SUBJECT_PREFIX, INTEREST_SUBJECT_PREFIX, RECEIVER_VERSIONS_SUBJECT_PREFIX)", err, errOverlap)
	}
	return err
}

func (t *Topology) ensureProduct(ctx context.Context, subjects []string) (*jetstream.StreamInfo, error) {
	o := t.o
	s, err := t.js.Stream(ctx, o.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = t.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        o.Stream,
			Description: "Catalogue product notifications, one message per product event (cdse receiver)",
			Subjects:    subjects,
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Replicas:    max(o.Replicas, 1),
			Duplicates:  o.Duplicates,
			MaxAge:      o.MaxAge,
			MaxBytes:    orUnlimited(o.MaxBytes),
		})
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", o.Stream, overlapError(err))
		}
		return s.CachedInfo(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", o.Stream, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Storage != jetstream.FileStorage {
		return nil, fmt.Errorf("stream %s uses %s storage; the receiver needs file storage so that acknowledged notifications survive a restart", o.Stream, cfg.Storage)
	}
	want := cfg
	for _, subj := range subjects {
		// Not one the stream takes already: cdse.fetchretry.> (the retry
		// subject before it carried the stream's name) keeps taking
		// cdse.fetchretry.<stream>.>, and JetStream refuses a stream that
		// lists both.
		if !covered(want.Subjects, subj) {
			want.Subjects = append(slices.Clone(want.Subjects), subj)
		}
	}
	want.Duplicates = o.Duplicates
	want.MaxAge = o.MaxAge
	want.MaxBytes = orUnlimited(o.MaxBytes)
	if o.Replicas > 0 {
		want.Replicas = o.Replicas
	}
	if slices.Equal(want.Subjects, cfg.Subjects) && want.Duplicates == cfg.Duplicates &&
		want.MaxAge == cfg.MaxAge && want.MaxBytes == cfg.MaxBytes && want.Replicas == cfg.Replicas {
		return s.CachedInfo(), nil
	}
	info, err := t.js.UpdateStream(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("update stream %s: %w", o.Stream, overlapError(err))
	}
	return info.CachedInfo(), nil
}

// QuarantineConfig is the quarantine stream as the receiver creates it.
func (t *Topology) QuarantineConfig() jetstream.StreamConfig {
	o := t.o
	return jetstream.StreamConfig{
		Name:        o.QuarantineStream,
		Description: "Notifications the cdse receiver refused, kept verbatim for inspection and replay",
		Subjects:    []string{o.QuarantinePrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Replicas:    max(o.Replicas, 1),
		Duplicates:  o.Duplicates,
		MaxAge:      o.QuarantineMaxAge,
		MaxBytes:    orUnlimited(o.QuarantineMaxBytes),
	}
}

// EnsureQuarantine creates the quarantine stream or brings its limits to
// the configured ones.
func (t *Topology) EnsureQuarantine(ctx context.Context) error {
	if _, err := t.js.CreateOrUpdateStream(ctx, t.QuarantineConfig()); err != nil {
		return fmt.Errorf("quarantine stream %s: %w", t.o.QuarantineStream, err)
	}
	return nil
}

// CompleteStream is the complete ranges' stream (COMPLETE_STREAM).
func (t *Topology) CompleteStream() string { return cmp.Or(t.o.CompleteStream, event.CompleteStream) }

// CompleteSubject is the subject of an interest's (or
// event.CompleteProducts') complete range of an event, under
// COMPLETE_SUBJECT_PREFIX.
func (t *Topology) CompleteSubject(interest string, ev event.Kind) string {
	return event.CompleteSubjectIn(cmp.Or(t.o.CompletePrefix, event.CompletePrefix), interest, ev)
}

// CompleteConfig is the stream of the complete ranges' announcements
// (COMPLETE_STREAM, subjects <COMPLETE_SUBJECT_PREFIX>.>): the last
// message of each subject, on file, so that a consumer reads where a range
// is now with one direct get.
func (t *Topology) CompleteConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              t.CompleteStream(),
		Description:       "Complete ranges of the product stream and of each interest, by event: the last announcement of each (cdse receiver)",
		Subjects:          []string{cmp.Or(t.o.CompletePrefix, event.CompletePrefix) + ".>"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: 1,
		Replicas:          max(t.o.Replicas, 1),
		AllowDirect:       true,
	}
}

// EnsureComplete creates the complete stream or brings it to its
// settings, when it is this receiver's: one that another product stream
// owns is refused with ErrNotOwner (EnsureOwned), so that a second
// receiver never announces its ranges where the first one's consumers
// read theirs.
func (t *Topology) EnsureComplete(ctx context.Context) error {
	if _, err := EnsureOwned(ctx, t.js, t.CompleteConfig(), t.o.Stream,
		"COMPLETE_STREAM and COMPLETE_SUBJECT_PREFIX to a stream and subjects of this receiver's own"); err != nil {
		return fmt.Errorf("complete stream %s: %w", t.CompleteStream(), err)
	}
	return nil
}

// State opens (creating it when missing) the state bucket: the reconcile
// watermarks and the backfill checkpoints.
func (t *Topology) State(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := t.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: t.StateBucket(),
		Description: "cdse receiver state (reconcile watermarks, backfill checkpoints)",
		Storage:     jetstream.FileStorage, Replicas: max(t.o.Replicas, 1)})
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w", t.StateBucket(), err)
	}
	return kv, nil
}

// Lease opens (creating it when missing) the bucket of the reconcile
// lease, whose keys expire after ttl.
func (t *Topology) Lease(ctx context.Context, ttl time.Duration) (jetstream.KeyValue, error) {
	kv, err := t.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: t.LeaseBucket(),
		Description: "cdse receiver reconcile lease", TTL: ttl,
		Storage: jetstream.FileStorage, Replicas: max(t.o.Replicas, 1)})
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w", t.LeaseBucket(), err)
	}
	return kv, nil
}

// VersionsBucket is the bucket of the latest versions per acquisition
// (internal/stream/supersede), named after the product stream as the
// state bucket is.
func (t *Topology) VersionsBucket() string { return VersionsBucketOf(t.o.Stream) }

// VersionsBucketOf is the versions bucket of the product stream named
// stream: what a reader of it (the fetcher) opens.
func VersionsBucketOf(stream string) string { return stream + "_VERSIONS" }

// VersionsConsumer is the receiver's durable consumer of the product
// subjects that keeps the versions bucket and publishes the notices
// (internal/stream/supersede); the embedded server's consumers may not
// touch it.
const VersionsConsumer = "cdse-receiver-versions"

// Versions opens (creating it when missing, or bringing its TTL to ttl)
// the versions bucket, whose keys, one per acquisition, are forgotten ttl
// after their last change (RECEIVER_VERSIONS_MAX_AGE).
func (t *Topology) Versions(ctx context.Context, ttl time.Duration) (jetstream.KeyValue, error) {
	kv, err := t.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: t.VersionsBucket(),
		Description: "cdse receiver: the versions known of each acquisition (the product stream's notices of supersession)", TTL: ttl,
		Storage: jetstream.FileStorage, Replicas: max(t.o.Replicas, 1)})
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w", t.VersionsBucket(), err)
	}
	return kv, nil
}

// SupersededSubject is the subject of a notice about a product of
// collection and productType (RECEIVER_VERSIONS_SUBJECT_PREFIX).
func (t *Topology) SupersededSubject(collection, productType string) string {
	return event.SupersededSubject(t.o.SupersededPrefix, collection, productType)
}

// ProductFilter is the product subjects, <NATS_SUBJECT_PREFIX>.>: the
// product events without the interests' copies, the retries or the
// notices.
func (t *Topology) ProductFilter() string { return t.o.SubjectPrefix + ".>" }

// ErrNoticesNotTaken marks a product stream that does not take the
// notices' subjects: none are configured, or another stream of this NATS
// takes them. It is a setting to change, not an error to retry.
var ErrNoticesNotTaken = errors.New("the product stream does not take the notices of supersession")

// NoticesTaken says, with nil, that the product stream takes the notices'
// subjects, or why not: ErrNoticesNotTaken when none are configured or
// another stream of this NATS takes them (EnsureProduct made the product
// stream without them), another error when the stream cannot be read.
func (t *Topology) NoticesTaken(ctx context.Context) error {
	notices := t.o.noticeSubjects()
	if notices == "" {
		return fmt.Errorf("%w: no RECEIVER_VERSIONS_SUBJECT_PREFIX", ErrNoticesNotTaken)
	}
	s, err := t.js.Stream(ctx, t.o.Stream)
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", t.o.Stream, err)
	}
	if covered(s.CachedInfo().Config.Subjects, notices) {
		return nil
	}
	return fmt.Errorf("%w: stream %s does not take %s, another stream of this NATS does (a second receiver: set RECEIVER_VERSIONS_SUBJECT_PREFIX to subjects of its own, or RECEIVER_VERSIONS=false)",
		ErrNoticesNotTaken, t.o.Stream, notices)
}

func orUnlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
