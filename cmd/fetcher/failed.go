package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// failedHelp is the failed command's long help.
const failedHelp = `The product events the fetcher gave up (offline, not found, a checksum that
keeps failing, no space left, FETCH_MAX_ATTEMPTS deliveries, a body that is
not a notification), kept with the notification and the reason on
FETCH_STREAM, subjects <FETCH_FAILED_PREFIX>.<collection>.<productType>:

  list     what failed: sequence, time, collection, product type, product,
           reason
  show     the notification of one, exactly as stored (-o json|yaml: with
           its headers and metadata)
  retry    put every failed event (or those named: retry 12 15) back to the
           fetchers, exactly once: each is queued on the product stream
           (NATS_STREAM) on cdse.fetchretry.<NATS_STREAM>.<consumer>.<collection>.<productType>,
           which only the fetcher's consumer takes, so it is fetched within
           FETCH_CONCURRENCY like every product; each one queued is removed
           from the failed events
  drop     remove the failed events named (drop 12 15) for good

list reads the headers only and retry one event at a time, so thousands of
failed events cost the command a few megabytes.

The settings are the fetcher's: the environment and, with --config, its
YAML file (NATS_URL and its credentials, FETCH_STREAM, FETCH_FAILED_PREFIX,
FETCH_CONSUMER, NATS_STREAM), validated as the server validates them: run
the command with the fetcher's environment (kubectl exec into a replica).

Exit codes: 0 ok, 1 error (also: a sequence given is not a failed event),
2 usage.`

// failedCmd is what the failed verbs share: the output flag and the
// settings, and a connection opened from them.
type failedCmd struct {
	getenv     func(string) string
	configFile *string // the root's --config
	out        *cli.Output
}

// newFailed is `fetcher failed list|show|retry|drop`, a file per verb, as
// the receiver's quarantine.
func newFailed(getenv func(string) string, configFile *string) *cobra.Command {
	fc := &failedCmd{getenv: getenv, configFile: configFile}
	f := &cobra.Command{
		Use:   "failed",
		Short: "List, show, retry and drop the product events the fetcher gave up",
		Long:  failedHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want one of list, show SEQ, retry [SEQ...], drop SEQ...")
		},
	}
	fc.out = cli.AddOutputFlag(f)
	f.PersistentPreRunE = func(*cobra.Command, []string) error { return fc.out.Check() }
	f.AddCommand(newFailedList(fc), newFailedShow(fc), newFailedRetry(fc), newFailedDrop(fc))
	return f
}

// open loads and validates the settings it reads the streams with (as
// `fetcher serve` reads them; the target and the catalogue login are not
// needed) and connects.
func (fc *failedCmd) open(cmd *cobra.Command) (fetchconfig.Config, *failedStore, func(), error) {
	cfg, err := loadWith(cmd, fc.getenv, *fc.configFile, fetchconfig.Config.ValidateStreams)
	if err != nil {
		return cfg, nil, nil, err
	}
	o := fetcher.NATSOptions(cfg)
	nc, err := natsconn.ConnectOnce(o, "cdse-fetcher-failed")
	if err != nil {
		return cfg, nil, nil, err
	}
	calls := &natsCalls{stderr: cmd.ErrOrStderr(), who: o.Who()}
	nc.SetErrorHandler(calls.handler)
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return cfg, nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return cfg, &failedStore{js: js, calls: calls, stream: cfg.Stream, prefix: cfg.FailedPrefix}, nc.Close, nil
}

// natsCalls bounds each NATS request of a verb, and ends at once, with the
// server's refusal as its error, one that a login may not make (the
// embedded server's fetcher login may not delete a message of
// FETCH_STREAM): NATS reports a refused request apart, and never answers
// it.
type natsCalls struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc // of the request under way
	stderr io.Writer
	who    string // the NATS user, named with a refusal
}

func (c *natsCalls) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		if strings.Contains(err.Error(), "$JS.API.CONSUMER.DELETE.") {
			return // an ordered consumer's clean-up: the server drops it once idle
		}
		c.mu.Lock()
		cancel := c.cancel
		c.mu.Unlock()
		if cancel != nil {
			// The server names the subject only: who was refused, and
			// the settings that give the fetcher's rights, are ours to
			// say.
			cancel(fmt.Errorf("%w (as NATS user %s): %s", err, c.who, fetcher.PermissionHint))
			return
		}
	}
	fmt.Fprintf(c.stderr, "%v\n", err)
}

// call is ctx for one request: failedCallTimeout, or the refusal.
func (c *natsCalls) call(ctx context.Context) (context.Context, func()) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	ctx, cancel := context.WithTimeout(ctx, failedCallTimeout)
	c.mu.Lock()
	c.cancel = cancelCause
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
		cancelCause(nil)
	}
}

// refused is the server's refusal that ended the request of ctx, else err.
func refused(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, nats.ErrPermissionViolation) {
		return cause
	}
	return err
}

// failedEvent is one failed event as an operator sees it.
type failedEvent struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
	Subject     string    `json:"subject"`
	Collection  string    `json:"collection"`
	ProductType string    `json:"productType"`
	Event       string    `json:"event,omitempty"`
	ProductID   string    `json:"productId,omitempty"`
	ProductName string    `json:"productName,omitempty"`
	Reason      string    `json:"reason"`
	// Consumer is the fetcher's consumer that gave it up (from the
	// event's Nats-Msg-Id, failed/<consumer>/<product sequence>).
	Consumer string `json:"consumer,omitempty"`
	// RetryOf is the failed event an earlier retry came from, when this
	// one is the retry's failure (the Cdse-Fetch-Retry header).
	RetryOf string      `json:"retryOf,omitempty"`
	Bytes   int         `json:"bytes"`
	Header  nats.Header `json:"-"`
	Body    []byte      `json:"-"`
}

// failedStore reads and removes the failed events of FETCH_STREAM.
type failedStore struct {
	js     jetstream.JetStream
	calls  *natsCalls
	stream string
	prefix string // FETCH_FAILED_PREFIX
}

// errNoFailed: no failed event with that sequence.
var errNoFailed = errors.New("no such failed event")

// failedCallTimeout bounds each NATS request of the failed verbs.
const failedCallTimeout = 10 * time.Second

// failedPerFetch bounds what one fetch of bodies brings: a few
// notifications (as the quarantine reader's bodiesPerFetch).
const failedPerFetch = 4

func (r *failedStore) handle(ctx context.Context) (jetstream.Stream, error) {
	ctx, done := r.calls.call(ctx)
	defer done()
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", r.stream, refused(ctx, err))
	}
	return s, nil
}

// List returns every failed event's metadata, oldest first, without the
// bodies: it reads the headers only. An event whose headers do not name
// the product is read whole, alone, to decode its body.
func (r *failedStore) List(ctx context.Context) ([]failedEvent, error) {
	out := []failedEvent{}
	err := r.each(ctx, true, func(ev failedEvent) error {
		if ev.ProductID == "" || ev.ProductName == "" {
			if whole, err := r.Get(ctx, ev.Seq); err == nil {
				ev = whole
				ev.Body, ev.Header = nil, nil
			}
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// Each calls fn for every failed event, oldest first, with its body, a few
// at a time. An error of fn stops it.
func (r *failedStore) Each(ctx context.Context, fn func(failedEvent) error) error {
	return r.each(ctx, false, fn)
}

// each reads the failed subjects with an ordered consumer (no state on the
// server), up to the last failed event there was when it began: events
// given up meanwhile (a retry failing again) wait for the next run.
func (r *failedStore) each(ctx context.Context, headersOnly bool, fn func(failedEvent) error) error {
	perFetch := failedPerFetch
	if headersOnly {
		perFetch = 500
	}
	return r.read(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.prefix + ".>"}, HeadersOnly: headersOnly}, perFetch,
		func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
			ev := r.event(md.Sequence.Stream, md.Timestamp, m.Subject(), m.Headers(), m.Data())
			if headersOnly {
				ev.Body = nil
				ev.Bytes, _ = strconv.Atoi(m.Headers().Get(nats.MsgSize))
			}
			return fn(ev)
		})
}

// read reads FETCH_STREAM with an ordered consumer of oc (no state on the
// server) up to the last message on its one filter subject there was when
// it began: messages stored meanwhile wait for the next run.
func (r *failedStore) read(ctx context.Context, oc jetstream.OrderedConsumerConfig, perFetch int, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	filter := oc.FilterSubjects[0]
	lctx, done := r.calls.call(ctx)
	last, err := s.GetLastMsgForSubject(lctx, filter)
	err = refused(lctx, err)
	done()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: last of %s: %w", r.stream, filter, err)
	}
	return topology.ReadTo(ctx, s, oc, perFetch, last.Sequence, fn)
}

// Get returns one failed event, with its body and headers.
func (r *failedStore) Get(ctx context.Context, seq uint64) (failedEvent, error) {
	s, err := r.handle(ctx)
	if err != nil {
		return failedEvent{}, err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	m, err := s.GetMsg(ctx, seq)
	err = refused(ctx, err)
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && !strings.HasPrefix(m.Subject, r.prefix+".")) {
		// A fetched event's sequence is not a failed event's either.
		return failedEvent{}, fmt.Errorf("%w: %d", errNoFailed, seq)
	}
	if err != nil {
		return failedEvent{}, fmt.Errorf("read failed event %d: %w", seq, err)
	}
	return r.event(m.Sequence, m.Time, m.Subject, m.Header, m.Data), nil
}

// Remove deletes a failed event (dropped, or queued again by a retry); one
// already gone is no error (a second run).
func (r *failedStore) Remove(ctx context.Context, seq uint64) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("remove failed event %d: %w", seq, refused(ctx, err))
	}
	return nil
}

// MayRemove asks NATS whether the login may remove a failed event (what a
// retry and a drop do, and their dry runs check): it deletes sequence 0,
// which no message has, so that the answer with the right is "no message
// found" and nothing is removed; without it, a permissions violation. A
// stream that denies deletes (deny_delete) says "not permitted", and
// refuses the real removal as well.
func (r *failedStore) MayRemove(ctx context.Context) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	err = refused(ctx, s.DeleteMsg(ctx, 0))
	if err == nil {
		return fmt.Errorf("remove a failed event from %s: the check deleted sequence 0", r.stream)
	}
	if !errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) || strings.Contains(err.Error(), "not permitted") {
		return fmt.Errorf("remove a failed event from %s: %w", r.stream, err)
	}
	return nil
}

// event is a failed event's view: the collection and product type are the
// subject's tokens (the fetcher's), the product from the headers, or from
// the body when it decodes.
func (r *failedStore) event(seq uint64, at time.Time, subject string, h nats.Header, data []byte) failedEvent {
	ev := failedEvent{Seq: seq, Time: at, Subject: subject, Header: h, Body: data, Bytes: len(data),
		Reason: h.Get(event.HeaderFetchError), RetryOf: h.Get(headerFetchRetry),
		Event: h.Get(event.HeaderEvent), ProductID: h.Get(event.HeaderProductID), ProductName: h.Get(event.HeaderProductName)}
	tokens := strings.Split(strings.TrimPrefix(subject, r.prefix+"."), ".")
	if len(tokens) == 2 {
		ev.Collection, ev.ProductType = tokens[0], tokens[1]
	}
	if id := strings.Split(h.Get(event.HeaderMsgID), "/"); len(id) == 3 && id[0] == "failed" {
		ev.Consumer = id[1]
	}
	if len(data) > 0 {
		if f, err := event.DecodeFailedData(data, h); err == nil && f.Notification != nil {
			n := f.Notification
			ev.Event, ev.ProductID, ev.ProductName = string(n.Event), n.ProductID, n.ProductName
		}
	}
	return ev
}
