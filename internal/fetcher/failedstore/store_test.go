package failedstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// The streams as the fetcher and the receiver declare them by default:
// FETCH_STREAM with the fetched and failed subjects, the product stream
// taking the retry subjects, the fetcher's consumer filtering its own.
const (
	fetchStream   = "FETCH"
	failedPrefix  = "cdse.fetchfailed"
	fetchedPrefix = "cdse.fetched"
	productStream = "PRODUCTS"
	consumer      = "fetcher"
	hint          = "grant the fetcher its rights"
)

// world is a real nats-server with FETCH_STREAM, a store reading it, and a
// client of its own that stores what the fetcher would.
type world struct {
	url   string
	js    jetstream.JetStream // the test's client
	store *failedstore.Store
}

func newWorld(t *testing.T, fetch jetstream.StreamConfig) *world {
	t.Helper()
	srv := natstest.RunJetStream(t)
	js, closeJS := natstest.JetStream(t, srv.ClientURL())
	t.Cleanup(closeJS)
	fetch.Name = fetchStream
	fetch.Subjects = []string{fetchedPrefix + ".>", failedPrefix + ".>"}
	if _, err := js.CreateStream(context.Background(), fetch); err != nil {
		t.Fatal(err)
	}
	return &world{url: srv.ClientURL(), js: js, store: open(t, srv.ClientURL(), "store")}
}

func open(t *testing.T, url, who string, opts ...nats.Option) *failedstore.Store {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := failedstore.New(nc, failedstore.Options{Stream: fetchStream, FailedPrefix: failedPrefix, FetchedPrefix: fetchedPrefix, Who: who, PermissionHint: hint})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fail stores a failed event as the fetcher does (internal/fetcher
// failedMsg): the product's Cdse- headers, the reason, the Nats-Msg-Id
// failed/<consumer>/<product sequence>.
func (w *world) fail(t *testing.T, subject string, h nats.Header, body []byte, productSeq uint64, reason string) uint64 {
	t.Helper()
	if h == nil {
		h = nats.Header{}
	}
	h.Set(event.HeaderFetchError, reason)
	h.Set(event.HeaderMsgID, fmt.Sprintf("failed/%s/%d", consumer, productSeq))
	ack, err := w.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Header: h, Data: body})
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func (w *world) publish(t *testing.T, subject string, h nats.Header) uint64 {
	t.Helper()
	ack, err := w.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Header: h, Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

func productHeaders(ev, id, name string) nats.Header {
	return nats.Header{event.HeaderEvent: {ev}, event.HeaderProductID: {id}, event.HeaderProductName: {name}, event.HeaderCollection: {"SENTINEL-2"}}
}

// s2 is a real notification's body and what it names.
func s2(t *testing.T) (body []byte, n *event.Notification) {
	t.Helper()
	body = fixtures.Notification(t, "created-s2.json")
	n, err := event.DecodeData(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return body, n
}

// TestListGetEach: every failed event is listed, oldest first, from its
// headers only (the product decoded from the body where the headers do not
// name it), each read whole by Get and Each; a fetched event of the same
// stream, or a sequence of none, is ErrNotFound.
func TestListGetEach(t *testing.T) {
	w := newWorld(t, jetstream.StreamConfig{})
	ctx := context.Background()
	if l, err := w.store.List(ctx); err != nil || l == nil || len(l) != 0 {
		t.Fatalf("List of none = %#v, %v; want an empty list", l, err)
	}
	body, n := s2(t)
	fetched := w.publish(t, fetchedPrefix+".created.SENTINEL-2.S2MSI2A", productHeaders("created", "p0", "P0"))

	type want struct {
		seq                                                  uint64
		subject, collection, productType, ev, id, name, cons string
		reason, retryOf                                      string
		body                                                 []byte
	}
	var wants []want
	add := func(subject string, h nats.Header, body []byte, productSeq uint64, reason string, w0 want) {
		w0.seq = w.fail(t, subject, h, body, productSeq, reason)
		w0.subject, w0.reason, w0.body, w0.cons = subject, reason, body, consumer
		wants = append(wants, w0)
	}
	// The fetcher's: the product's headers and the notification.
	add(failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", n.ProductID, n.ProductName), body, 7, "not found (404)",
		want{collection: "SENTINEL-2", productType: "S2MSI2A", ev: "created", id: n.ProductID, name: n.ProductName})
	// Headers that name nothing: the body read whole tells.
	add(failedPrefix+".SENTINEL-2.S2MSI2A", nil, body, 8, "offline",
		want{collection: "SENTINEL-2", productType: "S2MSI2A", ev: "created", id: n.ProductID, name: n.ProductName})
	// A body that is not a notification: what the headers say, no more.
	add(failedPrefix+".unknown.unknown", nats.Header{event.HeaderProductID: {"p9"}}, []byte("not json"), 9, "not a notification",
		want{collection: "unknown", productType: "unknown", id: "p9"})
	// A retry's failure names the failed event it came from.
	retry := productHeaders("created", "p10", "P10")
	retry.Set(event.HeaderFetchRetry, "3")
	add(failedPrefix+".SENTINEL-2.S2MSI1C", retry, []byte("{}"), 10, "checksum mismatch",
		want{collection: "SENTINEL-2", productType: "S2MSI1C", ev: "created", id: "p10", name: "P10", retryOf: "3"})

	l, err := w.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != len(wants) {
		t.Fatalf("List = %d events, want %d: %+v", len(l), len(wants), l)
	}
	var each []failedstore.Event
	if err := w.store.Each(ctx, func(e failedstore.Event) error { each = append(each, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(each) != len(wants) {
		t.Fatalf("Each = %d events, want %d", len(each), len(wants))
	}
	for i, wt := range wants {
		got, err := w.store.Get(ctx, wt.seq)
		if err != nil {
			t.Fatalf("Get(%d): %v", wt.seq, err)
		}
		for _, c := range []struct {
			how string
			e   failedstore.Event
		}{{"List", l[i]}, {"Each", each[i]}, {"Get", got}} {
			e := c.e
			if e.Seq != wt.seq || e.Subject != wt.subject || e.Collection != wt.collection || e.ProductType != wt.productType ||
				e.Event != wt.ev || e.ProductID != wt.id || e.ProductName != wt.name || e.Reason != wt.reason ||
				e.Consumer != wt.cons || e.RetryOf != wt.retryOf || e.Bytes != len(wt.body) || e.Time.IsZero() {
				t.Errorf("%s: event %d = %+v, want %+v", c.how, i, e, wt)
			}
			if c.how == "List" {
				if e.Body != nil {
					t.Errorf("List: event %d carries its body", i)
				}
			} else if string(e.Body) != string(wt.body) || e.Header.Get(event.HeaderFetchError) != wt.reason {
				t.Errorf("%s: event %d: body %q, headers %v", c.how, i, e.Body, e.Header)
			}
		}
	}
	for _, seq := range []uint64{fetched, 999} {
		if _, err := w.store.Get(ctx, seq); !errors.Is(err, failedstore.ErrNotFound) {
			t.Errorf("Get(%d) = %v, want ErrNotFound", seq, err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := w.store.Each(ctx, func(failedstore.Event) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Each after fn's error: %v, %d calls", err, calls)
	}
}

// TestDrop: a dry run removes nothing; a drop removes what it names, and
// says which were not failed events (a fetched event's sequence neither).
func TestDrop(t *testing.T) {
	w := newWorld(t, jetstream.StreamConfig{})
	ctx := context.Background()
	a := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "pa", "PA"), []byte("{}"), 1, "offline")
	b := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "pb", "PB"), []byte("{}"), 2, "offline")
	fetched := w.publish(t, fetchedPrefix+".created.SENTINEL-2.S2MSI2A", productHeaders("created", "pc", "PC"))

	for _, c := range []struct {
		name     string
		seqs     []uint64
		dryRun   bool
		results  []string
		dropped  int
		notFound int
		left     []uint64
	}{
		{"dry run", []uint64{a, 999}, true, []string{"would-drop", "not-found"}, 0, 1, []uint64{a, b}},
		{"drop", []uint64{a, fetched}, false, []string{"dropped", "not-found"}, 1, 1, []uint64{b}},
		{"again", []uint64{a}, false, []string{"not-found"}, 0, 1, []uint64{b}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum, err := w.store.Drop(ctx, c.seqs, c.dryRun)
			if err != nil {
				t.Fatal(err)
			}
			if sum.DryRun != c.dryRun || sum.Dropped != c.dropped || sum.NotFound != c.notFound || len(sum.Items) != len(c.results) {
				t.Fatalf("Drop = %+v", sum)
			}
			for i, r := range c.results {
				if it := sum.Items[i]; it.Seq != c.seqs[i] || it.Result != r || (r != "not-found" && (it.ProductID != "pa" || it.Reason != "offline")) {
					t.Errorf("item %d = %+v, want %s", i, it, r)
				}
			}
			if got := seqs(t, w.store); fmt.Sprint(got) != fmt.Sprint(c.left) {
				t.Errorf("left %v, want %v", got, c.left)
			}
		})
	}
	s, err := w.js.Stream(ctx, fetchStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMsg(ctx, fetched); err != nil {
		t.Errorf("the fetched event is gone: %v", err)
	}
}

func seqs(t *testing.T, s *failedstore.Store) []uint64 {
	t.Helper()
	l, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := []uint64{}
	for _, e := range l {
		out = append(out, e.Seq)
	}
	return out
}

// productStreams declares the product stream with subjects and, unless
// filters is nil, the fetcher's consumer filtering them.
func (w *world) productStreams(t *testing.T, subjects, filters []string) {
	t.Helper()
	ctx := context.Background()
	s, err := w.js.CreateStream(ctx, jetstream.StreamConfig{Name: productStream, Subjects: subjects, Duplicates: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if filters != nil {
		if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumer, FilterSubjects: filters, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	retrySubjects = event.FetchRetrySubjects(productStream) + ".>"
	ownRetries    = event.FetchRetrySubjects(productStream) + "." + consumer + ".>"
)

// TestRetry: each failed event is queued once on the product stream for
// the consumer that gave it up, with the product's headers, the failed
// event it came from and a Nats-Msg-Id of its own, then removed; a dry run
// queues and removes nothing.
func TestRetry(t *testing.T) {
	w := newWorld(t, jetstream.StreamConfig{})
	w.productStreams(t, []string{"cdse.product.>", retrySubjects}, []string{"cdse.product.>", ownRetries})
	ctx := context.Background()
	h := productHeaders("created", "pa", "PA")
	h.Set(event.HeaderFetchRetry, "1") // an earlier retry's: replaced
	a := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", h, []byte(`{"a":1}`), 5, "offline")
	b := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI1C", productHeaders("created", "pb", "PB"), []byte(`{"b":1}`), 6, "offline")

	dry, err := w.store.Retry(ctx, failedstore.RetryOptions{ProductStream: productStream, Consumer: consumer, DryRun: true})
	if err != nil || !dry.DryRun || dry.Checked != 2 || dry.Retried != 2 || dry.Queued != 0 || len(dry.Items) != 2 || dry.Items[0].Result != "would-retry" {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if n := natstest.StreamCount(t, w.js, productStream); n != 0 {
		t.Fatalf("a dry run queued %d", n)
	}

	sum, err := w.store.Retry(ctx, failedstore.RetryOptions{ProductStream: productStream, Consumer: "other", Seqs: []uint64{a, 999}})
	if err != nil || sum.Checked != 1 || sum.Retried != 1 || sum.Queued != 1 || sum.NotFound != 1 || len(sum.Items) != 2 {
		t.Fatalf("Retry = %+v, %v", sum, err)
	}
	wantSubject := event.FetchRetrySubjects(productStream) + "." + consumer + ".SENTINEL-2.S2MSI2A"
	if it := sum.Items[0]; it.Seq != a || it.Result != "retried" || it.ProductID != "pa" || it.Subject != wantSubject {
		t.Errorf("item = %+v", it)
	}
	if it := sum.Items[1]; it.Seq != 999 || it.Result != "not-found" {
		t.Errorf("item = %+v", it)
	}
	if got := seqs(t, w.store); fmt.Sprint(got) != fmt.Sprint([]uint64{b}) {
		t.Errorf("left %v, want [%d]", got, b)
	}
	msgs := natstest.StreamMessages(t, w.js, productStream)
	if len(msgs) != 1 {
		t.Fatalf("%d queued, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Subject != wantSubject || string(m.Data) != `{"a":1}` || m.Header.Get(event.HeaderProductID) != "pa" ||
		m.Header.Get(event.HeaderFetchRetry) != fmt.Sprint(a) || m.Header.Get(event.HeaderMsgID) != fmt.Sprintf("fetchretry/%s/%d", fetchStream, a) ||
		m.Header.Get(event.HeaderFetchError) != "" {
		t.Errorf("queued %s %v %q", m.Subject, m.Header, m.Data)
	}
}

// TestRetryQueuesOnce: a failed event whose removal failed after it was
// queued (a stream that denies deletes) is kept; a second retry finds its
// queued copy a duplicate, and the product stream holds one.
func TestRetryQueuesOnce(t *testing.T) {
	w := newWorld(t, jetstream.StreamConfig{DenyDelete: true})
	w.productStreams(t, []string{retrySubjects}, []string{ownRetries})
	ctx := context.Background()
	a := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "pa", "PA"), []byte("{}"), 5, "offline")
	o := failedstore.RetryOptions{ProductStream: productStream, Consumer: consumer}
	for i, wantQueued := range []int{1, 0} {
		sum, err := w.store.Retry(ctx, o)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("failed event %d is queued again, but", a)) {
			t.Fatalf("retry %d: %v, want the removal's error", i, err)
		}
		if sum.Checked != 1 || sum.Queued != wantQueued || sum.Duplicates != 1-wantQueued || sum.Retried != 0 {
			t.Errorf("retry %d: %+v", i, sum)
		}
	}
	if n := natstest.StreamCount(t, w.js, productStream); n != 1 {
		t.Errorf("%d queued, want 1", n)
	}
	if _, err := w.store.Drop(ctx, []uint64{a}, true); err == nil || !strings.Contains(err.Error(), "remove a failed event from "+fetchStream) {
		t.Errorf("a dry drop where deletes are denied: %v", err)
	}
}

// TestRetryNobodyWouldFetch: a retry no fetcher would take is refused,
// with the reason, and the failed event kept.
func TestRetryNobodyWouldFetch(t *testing.T) {
	for _, c := range []struct {
		name              string
		subjects, filters []string
		want              string
	}{
		{"no consumer", []string{"cdse.product.>", retrySubjects}, nil, "no consumer fetcher on PRODUCTS: no fetcher would take the retry"},
		{"a stream without the retry subjects", []string{"cdse.product.>"}, []string{"cdse.product.>"}, "the product stream PRODUCTS does not take"},
		{"a consumer without its retries", []string{"cdse.product.>", retrySubjects}, []string{"cdse.product.>"}, "the consumer fetcher on PRODUCTS does not take"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, jetstream.StreamConfig{})
			w.productStreams(t, c.subjects, c.filters)
			a := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "pa", "PA"), []byte("{}"), 5, "offline")
			for _, dry := range []bool{true, false} {
				_, err := w.store.Retry(context.Background(), failedstore.RetryOptions{ProductStream: productStream, Consumer: consumer, DryRun: dry})
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("failed event %d kept: ", a)) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("dry run %v: %v, want %q", dry, err, c.want)
				}
			}
			if got := seqs(t, w.store); fmt.Sprint(got) != fmt.Sprint([]uint64{a}) {
				t.Errorf("left %v", got)
			}
		})
	}
}

// TestRefusedAtOnce: a request the login may not make ends at once with
// the server's refusal, who was refused and what to fix, rather than at
// the call's timeout; the dry runs find it before anything is done.
func TestRefusedAtOnce(t *testing.T) {
	opts := natstest.DefaultOptions
	opts.StoreDir = t.TempDir()
	opts.Users = []*server.User{
		{Username: "admin", Password: "a"},
		{Username: "reader", Password: "r", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.STREAM.MSG.DELETE.>", event.FetchRetryPrefix + ".>"}}}},
	}
	srv := natstest.Run(t, opts)
	js, closeJS := natstest.JetStream(t, srv.ClientURL(), nats.UserInfo("admin", "a"))
	t.Cleanup(closeJS)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: fetchStream, Subjects: []string{fetchedPrefix + ".>", failedPrefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	w := &world{url: srv.ClientURL(), js: js}
	w.productStreams(t, []string{retrySubjects}, []string{ownRetries})
	a := w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "pa", "PA"), []byte("{}"), 5, "offline")
	store := open(t, srv.ClientURL(), "reader", nats.UserInfo("reader", "r"))

	if l, err := store.List(ctx); err != nil || len(l) != 1 {
		t.Fatalf("the reader lists: %v, %v", l, err)
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"MayRemove", func() error { return store.MayRemove(ctx) }},
		{"Remove", func() error { return store.Remove(ctx, a) }},
		{"a dry drop", func() error { _, err := store.Drop(ctx, []uint64{a}, true); return err }},
		{"a dry retry", func() error {
			_, err := store.Retry(ctx, failedstore.RetryOptions{ProductStream: productStream, Consumer: consumer, DryRun: true})
			return err
		}},
		{"a retry", func() error {
			_, err := store.Retry(ctx, failedstore.RetryOptions{ProductStream: productStream, Consumer: consumer})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			began := time.Now()
			err := c.run()
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "(as NATS user reader): "+hint) {
				t.Errorf("%v, want the refusal, who and the hint", err)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("took %s: the refusal waited for the timeout", took)
			}
		})
	}
	if got := seqs(t, store); fmt.Sprint(got) != fmt.Sprint([]uint64{a}) {
		t.Errorf("left %v", got)
	}
	if n := natstest.StreamCount(t, js, productStream); n != 0 {
		t.Errorf("%d queued", n)
	}
}
