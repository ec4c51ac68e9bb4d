// Package cdsesim is a local stand-in for the Copernicus Data Space
// catalogue and its identity provider, faithful to the documented shapes and
// limits: the Keycloak-style token endpoint (password and refresh grants,
// TOTP, expiring tokens), the OData subscription service (PUSH and PULL,
// running/total limits, Read/Ack semantics, retention), the Products listing
// with OData $filter (internal/cdse/productfilter, the evaluator the receiver
// uses too), a generator of realistic products and the
// PUSH sender (three retries, then dropped). Tests and the demo run against
// it, since the real catalogue is a remote service.
package cdsesim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// User is an account of the identity provider.
type User struct {
	Password string
	// TOTP, when set, is the two-factor code the account requires.
	TOTP string
}

// Options configure a simulator.
type Options struct {
	Users map[string]User
	// Clients are confidential clients (client id → secret) for the
	// client-credentials grant of the imagery services.
	Clients map[string]string
	// MaxRunning is the running subscriptions per user: 1 by default, as
	// the live documentation says ("The limit of the running Subscriptions
	// (PUSH and PULL) for one user is 1"); the interface description this
	// project started from said 2.
	MaxRunning int
	MaxTotal   int           // running + paused per user (default 10)
	AccessTTL  time.Duration // default 10 min
	RefreshTTL time.Duration // default 60 min
	QueueCap   int           // PULL queue length (default 100000)
	Retention  time.Duration // full notification body in the queue (default 72 h)
	// PushRetries after the first attempt (default 3) and the first backoff
	// (default 200 ms, doubling).
	PushRetries int
	PushBackoff time.Duration
	PushTimeout time.Duration // per attempt (default 10 s)
	// PushDelay is how long after the event the first attempt is made (the
	// catalogue's own latency; 0: at once), and PushDropRate the share of
	// PUSH notifications it never sends at all (0..1, drawn from Seed):
	// what the receiver's delivery metrics must measure.
	PushDelay    time.Duration
	PushDropRate float64
	// Seed of the simulator's random numbers (0: from the clock).
	Seed uint64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Client sends PUSH notifications (default: a plain client).
	Client *http.Client
	// Journal, when set, is told of every product event once, as it
	// happens and before any delivery, with a copy of the product: the
	// ground truth of a test that checks what reached the stream.
	Journal func(event string, p Product)

	// Downloads (GET|HEAD .../Products(<Id>)/$value, download.go; the
	// files of a product's tree, .../Products(<Id>)/Nodes(<Name>)/.../$value,
	// and their listings, nodes.go).
	//
	// DownloadURL is the OData root of the download host (as
	// "https://download.dataspace.copernicus.eu/odata/v1"): a $value
	// request that reaches the simulator on any other host is redirected
	// there with RedirectStatus (default 307), as the live catalogue host
	// does; serve Handler() on both. "" serves $value on every host.
	DownloadURL    string
	RedirectStatus int
	// DownloadRate is each download's rate in bytes/s: 0 is the live
	// general account's 20 MB/s per connection, Unthrottled none.
	DownloadRate int64
	// NoRange ignores Range (200 and the whole product), as a download
	// service without range support would; by default a single range is
	// served (206) and If-Range honoured.
	NoRange bool
	// MaxDownloads is the concurrent downloads per user: 0 is the live
	// general account's 4 (the 5th gets 429), negative no cap.
	MaxDownloads int
	// ContentLength is the size of each generated product (nil: 64 to
	// 256 KiB): of a Sentinel-1/2/3 product's zip, its tree's files
	// sharing what the zip's headers and manifest leave (tree.go). Sizes
	// of gigabytes are fine: nothing holds a product in memory, but its
	// checksums cost a read of it on first listing (two for a tree: its
	// files, then the zip), and a tree's zip stays under 4 GiB (past it
	// the product has no tree).
	ContentLength func(Mission) int64
	// Faults the download service shows from the start (AddFault adds more).
	Faults []Fault
}

// Unthrottled as a DownloadRate: downloads at full speed.
const Unthrottled = -1

// The live general account's download quotas.
const (
	defaultDownloadRate = 20_000_000
	defaultMaxDownloads = 4
)

// Stats of the simulator, for tests and the demo.
type Stats struct {
	Pushed       int64 `json:"pushed"`       // notifications delivered (2xx)
	PushLost     int64 `json:"pushLost"`     // never sent (PushDropRate)
	PushAttempts int64 `json:"pushAttempts"` // HTTP requests made
	PushDropped  int64 `json:"pushDropped"`  // given up after the retries
	PushPending  int64 `json:"pushPending"`  // being delivered or retried now
	QueueDropped int64 `json:"queueDropped"` // removed from full PULL queues
	Logins       int64 `json:"logins"`       // password grants that succeeded

	Downloads         int64 `json:"downloads"`         // $value bodies begun (200 or 206), archives and files
	DownloadsComplete int64 `json:"downloadsComplete"` // of them, sent whole
	DownloadBytes     int64 `json:"downloadBytes"`     // body bytes sent, archives and files
	FileDownloads     int64 `json:"fileDownloads"`     // of Downloads, files of a tree (Nodes(...)/$value)
	FileBytes         int64 `json:"fileBytes"`         // of DownloadBytes, files' bytes
	DownloadRefused   int64 `json:"downloadRefused"`   // 429 for the concurrent-download cap
	DownloadFaults    int64 `json:"downloadFaults"`    // faults injected
	DownloadPeak      int   `json:"downloadPeak"`      // highest concurrency of any user (DownloadStats: per user)
}

// TokenPath is where the simulator's identity provider issues tokens, as
// the live one does (CDSE_TOKEN_URL is the server's address and this).
const TokenPath = "/auth/realms/CDSE/protocol/openid-connect/token"

// Sim is a running simulator; serve Handler() over HTTP.
type Sim struct {
	o Options

	mu       sync.Mutex
	tokens   map[string]tokenEntry
	subs     map[string]*subscription
	products map[string]*Product
	order    []string // product ids by publication
	rng      *rand.Rand

	duplicate atomic.Bool
	// nodeEntities: a node URL without /Nodes or /$value answers the
	// node's entity instead of 403 (nodes.go).
	nodeEntities atomic.Bool
	stats        struct{ pushed, lost, attempts, dropped, pending, queueDropped, logins atomic.Int64 }
	dl           downloads
	push         sync.WaitGroup
	ctx          context.Context
	cancel       context.CancelFunc
}

type tokenEntry struct {
	user    string
	expiry  time.Time
	refresh bool
}

// New returns a simulator; Close stops its PUSH sender.
func New(o Options) *Sim {
	if o.MaxRunning == 0 {
		o.MaxRunning = 1
	}
	if o.MaxTotal == 0 {
		o.MaxTotal = 10
	}
	if o.AccessTTL == 0 {
		o.AccessTTL = 10 * time.Minute
	}
	if o.RefreshTTL == 0 {
		o.RefreshTTL = time.Hour
	}
	if o.QueueCap == 0 {
		o.QueueCap = 100000
	}
	if o.Retention == 0 {
		o.Retention = 72 * time.Hour
	}
	if o.PushRetries == 0 {
		o.PushRetries = 3
	}
	if o.PushBackoff == 0 {
		o.PushBackoff = 200 * time.Millisecond
	}
	if o.PushTimeout == 0 {
		o.PushTimeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.PushTimeout}
	}
	if o.RedirectStatus == 0 {
		o.RedirectStatus = http.StatusTemporaryRedirect
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sim{
		o: o, tokens: map[string]tokenEntry{}, subs: map[string]*subscription{}, products: map[string]*Product{},
		rng: rand.New(rand.NewPCG(cmp.Or(o.Seed, uint64(time.Now().UnixNano())), 1)), ctx: ctx, cancel: cancel,
	}
	s.dl.init(o)
	return s
}

// Close stops the PUSH sender and waits for it.
func (s *Sim) Close() {
	s.cancel()
	s.push.Wait()
}

// SetDuplicateSends makes the PUSH sender deliver every notification twice.
func (s *Sim) SetDuplicateSends(on bool) { s.duplicate.Store(on) }

// Stats returns the counters.
func (s *Sim) Stats() Stats {
	return Stats{Pushed: s.stats.pushed.Load(), PushLost: s.stats.lost.Load(), PushAttempts: s.stats.attempts.Load(), PushDropped: s.stats.dropped.Load(), PushPending: s.stats.pending.Load(),
		QueueDropped: s.stats.queueDropped.Load(), Logins: s.stats.logins.Load(),
		Downloads: s.dl.begun.Load(), DownloadsComplete: s.dl.complete.Load(), DownloadBytes: s.dl.bytes.Load(),
		FileDownloads: s.dl.fileBegun.Load(), FileBytes: s.dl.fileBytes.Load(),
		DownloadRefused: s.dl.refused.Load(), DownloadFaults: s.dl.faulted.Load(), DownloadPeak: s.dl.peak()}
}

// WaitPushes blocks until every PUSH delivery started so far has ended
// (delivered or dropped).
func (s *Sim) WaitPushes() { s.push.Wait() }

// Handler serves the identity provider, the OData API and the admin API.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, s.handleToken)
	mux.HandleFunc("/odata/v1/", s.handleOData)
	mux.HandleFunc("/sim/", s.handleAdmin)
	return mux
}

// --- events ---

// CreateProduct adds p to the catalogue and notifies the subscriptions.
func (s *Sim) CreateProduct(p *Product) {
	if p.sums == nil {
		p.sums = &sums{} // hash it once, not at every listing
	}
	s.mu.Lock()
	s.products[p.ID] = p
	s.order = append(s.order, p.ID)
	s.mu.Unlock()
	s.emit("created", p)
}

// Generate creates n products of mission m published now.
func (s *Sim) Generate(m Mission, n int) []*Product { return s.GenerateWith(m, n, nil) }

// GenerateWith creates n products of mission m published now, each
// changed by adjust (when not nil) before it is announced: a size, an
// offline product, a product without checksums.
func (s *Sim) GenerateWith(m Mission, n int, adjust func(*Product)) []*Product {
	out := make([]*Product, n)
	for i := range out {
		s.mu.Lock()
		p := NewProduct(m, s.o.Now(), s.rng)
		s.mu.Unlock()
		if n := s.contentLength(m); n >= 0 {
			p.ContentLength = n
		}
		if adjust != nil {
			adjust(p)
		}
		s.CreateProduct(p)
		out[i] = p
	}
	return out
}

// ModifyProduct sets the product's ModificationDate to now and notifies.
func (s *Sim) ModifyProduct(id string) error {
	return s.changeProduct(id, "modified", func(p *Product, now time.Time) { p.ModificationDate = now })
}

// ReplaceContent is a reprocessed product: new bytes of length (and so
// new checksums) under the same id, ModificationDate now; it notifies
// modified and returns the product as it is now.
func (s *Sim) ReplaceContent(id string, length int64) (*Product, error) {
	var out *Product
	err := s.changeProduct(id, "modified", func(p *Product, now time.Time) {
		p.ModificationDate, p.ContentLength, p.sums = now, length, &sums{}
		out = p
	})
	return out, err
}

// DeleteProduct removes the product (DeletionCause e.g. "Duplicated product").
func (s *Sim) DeleteProduct(id, cause string) error {
	return s.changeProduct(id, "deleted", func(p *Product, now time.Time) { p.DeletionDate, p.DeletionCause = now, cause })
}

// changeProduct applies change to a copy of a live product, stores it and
// emits event.
// AddChecksum is the catalogue adding a product's checksum after its
// publication (a product listed without one, ChecksumDate later): the
// same bytes, its Checksum array now given, ModificationDate now; it
// notifies modified and returns the product as it is now.
func (s *Sim) AddChecksum(id string) (*Product, error) {
	var out *Product
	err := s.changeProduct(id, "modified", func(p *Product, now time.Time) {
		p.ModificationDate, p.ChecksumForm = now, ChecksumBoth
		out = p
	})
	return out, err
}

func (s *Sim) changeProduct(id, event string, change func(*Product, time.Time)) error {
	s.mu.Lock()
	p, ok := s.products[id]
	if !ok || !p.DeletionDate.IsZero() {
		s.mu.Unlock()
		return fmt.Errorf("no product %s", id)
	}
	p = p.clone()
	change(p, s.o.Now().UTC().Truncate(time.Microsecond))
	s.products[id] = p
	s.mu.Unlock()
	s.emit(event, p)
	return nil
}

type notificationJSON struct {
	Context           string         `json:"@odata.context"`
	SubscriptionEvent string         `json:"SubscriptionEvent"`
	ProductID         string         `json:"ProductId"`
	ProductName       string         `json:"ProductName,omitempty"`
	SubscriptionID    string         `json:"SubscriptionId"`
	NotificationDate  string         `json:"NotificationDate"`
	AckID             string         `json:"AckId,omitempty"`
	Value             map[string]any `json:"value,omitempty"`
}

// emit delivers the event to every matching subscription: running ones
// only (paused subscriptions get nothing, not even queued).
func (s *Sim) emit(event string, p *Product) {
	now := s.o.Now()
	if s.o.Journal != nil {
		s.o.Journal(event, *p.clone())
	}
	// The entity (and so the checksums: a read of the whole product) only
	// when a subscription may want it, and outside the lock, which every
	// download takes at each chunk.
	var entity map[string]any
	s.mu.Lock()
	anySub := len(s.subs) > 0
	s.mu.Unlock()
	if anySub {
		entity = p.Entity()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.sortedSubs() {
		if sub.Status != "running" || !slices.Contains(sub.SubscriptionEvent, event) || !p.matches(sub.filter) {
			continue
		}
		if entity == nil {
			entity = p.Entity() // a subscription made meanwhile
		}
		n := notificationJSON{
			Context: "$metadata#Notification/$entity", SubscriptionEvent: event, ProductID: p.ID, ProductName: p.Name,
			SubscriptionID: sub.ID, NotificationDate: fmtTime(now), Value: entity,
		}
		sub.LastNotificationDate = now
		if sub.SubscriptionType == "pull" {
			s.enqueue(sub, n, now)
			continue
		}
		body, _ := json.Marshal(n)
		sends := 1
		if s.duplicate.Load() {
			sends = 2
		}
		if s.o.PushDropRate > 0 && s.rng.Float64() < s.o.PushDropRate {
			s.stats.lost.Add(1)
			continue
		}
		for range sends {
			s.push.Add(1)
			s.stats.pending.Add(1)
			go s.deliver(sub.NotificationEndpoint, sub.NotificationEpUsername, sub.NotificationEpPassword, body)
		}
	}
}

func (s *Sim) sortedSubs() []*subscription {
	subs := make([]*subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		subs = append(subs, sub)
	}
	slices.SortFunc(subs, func(a, b *subscription) int { return a.SubmissionDate.Compare(b.SubmissionDate) })
	return subs
}

// deliver POSTs one notification with Basic auth; on a transport error or
// a non-2xx answer it retries PushRetries times with doubling backoff, then
// drops the notification, as the catalogue does.
func (s *Sim) deliver(endpoint, user, pass string, body []byte) {
	defer s.push.Done()
	defer s.stats.pending.Add(-1)
	if s.o.PushDelay > 0 {
		select {
		case <-s.ctx.Done():
			s.stats.dropped.Add(1)
			return
		case <-time.After(s.o.PushDelay):
		}
	}
	wait := s.o.PushBackoff
	for attempt := 0; attempt <= s.o.PushRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-s.ctx.Done():
				s.stats.dropped.Add(1)
				return
			case <-time.After(wait):
			}
			wait *= 2
		}
		s.stats.attempts.Add(1)
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			break
		}
		req.Header.Set("Content-Type", "application/json")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := s.o.Client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				s.stats.pushed.Add(1)
				return
			}
		}
	}
	s.stats.dropped.Add(1)
}

// --- helpers shared by the handlers ---

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// notFound writes the catalogue's 404 body.
func notFound(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusNotFound, map[string]any{"detail": map[string]any{"message": msg, "request_id": uuid.NewString()}})
}

// badRequest writes a 400 with the catalogue's detail shape.
func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"detail": map[string]any{"message": msg, "request_id": uuid.NewString()}})
}

// unprocessable writes a 422 validation error as the catalogue does.
func unprocessable(w http.ResponseWriter, loc []string, msg string, input any) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{"type": "value_error", "loc": loc, "msg": msg, "input": input}}})
}

// Clock is a settable clock for Options.Now and the clients under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
