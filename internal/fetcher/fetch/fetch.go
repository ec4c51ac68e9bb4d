// Package fetch downloads CDSE products into a target (a directory or an
// S3 bucket), verified: the bytes stream from the socket through MD5 and
// BLAKE3 into the target, never whole in memory, and only bytes whose
// length and checksums agree with the catalogue's are committed under the
// final name. Cuts resume with Range (the file target across processes),
// 429s, 5xx and resets are retried, and the bearer token goes only to the
// download host and the trusted hosts, over HTTPS (or loopback).
package fetch

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/zeebo/blake3"
	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
)

// Checksum is one of the catalogue's checksums of a product.
type Checksum struct{ Algorithm, Value string }

// Product is what the fetcher knows of a product from its notification.
type Product struct {
	ID, Name      string
	ContentLength int64 // 0 unknown
	Checksums     []Checksum
	Online        *bool // nil unknown
	// Files, when not empty, are path globs relative to the product's
	// root folder (manifest.Compile): only the files of its manifest
	// they select are fetched, one by one, into a folder (files.go);
	// empty, the whole archive.
	Files []string

	// file is set on the Product of one file of a product's tree
	// (files.go); nil for the archive.
	file *fileOf
}

// TokenSource gives the catalogue's bearer token;
// internal/cdse/cdselogin.PasswordSource meets it.
type TokenSource interface {
	Token(ctx context.Context) (*oauth2.Token, error)
	Invalidate(stale *oauth2.Token)
}

// Options are a Fetcher's settings; the zero values are the defaults.
type Options struct {
	// DownloadURL is the download service's OData root, as
	// https://download.dataspace.copernicus.eu/odata/v1; its host is
	// always trusted with the token.
	DownloadURL string
	// TrustedHosts get the token after a redirect: "domain[:port]", each
	// domain with its subdomains, over HTTPS, on the port named or 443
	// (default "dataspace.copernicus.eu"). The download URL's own origin
	// is always trusted.
	TrustedHosts []string
	// IdleTimeout cuts a download with no byte for this long (default 60 s).
	IdleTimeout time.Duration
	// MaxAttempts are the requests one Fetch makes at most (default 10).
	MaxAttempts int
	// RequireChecksum refuses (ErrUnverifiable) a product without a
	// usable checksum, where by default it is stored unverified.
	RequireChecksum bool
	// Entity re-reads the product's entity for its checksums
	// (catalogclient.Client.GetProduct); nil never.
	Entity func(ctx context.Context, id string) (json.RawMessage, error)
	// HTTPClient sends the requests (default: a client of its own); its
	// CheckRedirect is replaced by the token's rule.
	HTTPClient *http.Client
	// Backoff is the first wait between tries (default 1 s, doubling to
	// MaxBackoff, default 1 min).
	Backoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a server's Retry-After (default 5 min).
	MaxRetryAfter time.Duration
	// ProgressEvery is how often progress is called while bytes flow
	// (default 2 s).
	ProgressEvery time.Duration
	// LogEvery is how often a download's progress is logged, at info:
	// its bytes, rate and ETA (default 30 s).
	LogEvery time.Duration
	// HeaderTimeout bounds the wait for a response's headers (default 60 s).
	HeaderTimeout time.Duration
	// MaxHold is the longest wait (a Retry-After, the lock of a fetch of
	// the same key elsewhere) the Fetch sits out holding its download;
	// past it a Retry-After returns *DeferError for the caller to give
	// the work back with that delay (default: MaxRetryAfter, never).
	// The fetcher sets a quarter of its ack wait.
	MaxHold time.Duration
	// LockWait is how long a Fetch waits for another fetch of the same
	// key (on this target) to finish before it takes its lock over
	// (default 2 min; the fetcher sets its ack wait: a holder that long
	// silent has lost its message to this one).
	LockWait time.Duration
	// MinRate (bytes a second) averaged over MinRateWindow: below it a
	// download is cut, its partial kept, and ErrTooSlow returned for the
	// caller to resume later; 0 never.
	MinRate       int64
	MinRateWindow time.Duration
	// MaxUnknownSize caps a product whose length the notification does
	// not give (default 64 GiB): past it the download is a permanent
	// failure, its partial removed.
	MaxUnknownSize int64
}

// Result is a product stored.
type Result struct {
	Key, URL string
	Size     int64
	Verified []Checksum // the checksums checked
	// Unverified says why none was checked ("" when Verified is not empty).
	Unverified string
	Took       time.Duration
	// AlreadyThere: the key held the same size and checksums: not fetched.
	AlreadyThere bool
	// VerifiedInPlace: the key held the product stored unverified, and
	// its checksums, known since, verified it read back from the target
	// (AlreadyThere too): not fetched.
	VerifiedInPlace bool
	// Resumed are the bytes not downloaded again (a partial resumed).
	Resumed int64
	// Files is what became of Product.Files (files.go): the files
	// stored, or why the whole archive was fetched instead; nil when no
	// files were asked for.
	Files *FilesResult
}

// Fetcher downloads products into one target; safe for concurrent use.
type Fetcher struct {
	o       Options
	base    *url.URL
	trusted []trustedHost
	tokens  TokenSource
	target  target.Target
	client  *http.Client
	log     logrus.FieldLogger
	m       *metrics
}

// New is a Fetcher of o's download service into t.
func New(o Options, tokens TokenSource, t target.Target, reg prometheus.Registerer, log logrus.FieldLogger) (*Fetcher, error) {
	base, err := url.Parse(strings.TrimRight(o.DownloadURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("fetch: download URL %q is not an http(s) URL", o.DownloadURL)
	}
	if tokens == nil || t == nil {
		return nil, errors.New("fetch: a token source and a target are needed")
	}
	if o.TrustedHosts == nil {
		o.TrustedHosts = []string{"dataspace.copernicus.eu"}
	}
	trusted, err := parseTrusted(o.TrustedHosts)
	if err != nil {
		return nil, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.IdleTimeout, time.Minute)
	def(&o.Backoff, time.Second)
	def(&o.MaxBackoff, time.Minute)
	def(&o.MaxRetryAfter, 5*time.Minute)
	def(&o.ProgressEvery, 2*time.Second)
	def(&o.LogEvery, 30*time.Second)
	def(&o.HeaderTimeout, time.Minute)
	def(&o.MaxHold, o.MaxRetryAfter)
	def(&o.LockWait, 2*time.Minute)
	def(&o.MinRateWindow, 5*time.Minute)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.MaxUnknownSize <= 0 {
		o.MaxUnknownSize = 64 << 30
	}
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	var client http.Client
	if o.HTTPClient != nil {
		client = *o.HTTPClient
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = o.HeaderTimeout
		client.Transport = tr
	}
	// No overall Timeout: a product of gigabytes takes what it takes; the
	// idle timer and the context bound a download instead.
	client.Timeout = 0
	client.Transport = oneUse{cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport)}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{o: o, base: base, trusted: trusted, tokens: tokens, target: t, log: log, m: m}
	client.CheckRedirect = f.checkRedirect
	f.client = &client
	return f, nil
}

// oneUse sends each request on a connection of its own, closed after its
// answer. A download service that sends more bytes than its
// Content-Length would otherwise leave them on a pooled connection, where
// Go's transport reads them as an "unsolicited response" and logs them,
// product bytes on stderr; and a connection whose answer was cut or
// refused is no better. One TCP (and TLS) handshake a request costs
// nothing against a product's minutes of transfer.
type oneUse struct{ rt http.RoundTripper }

func (o oneUse) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Close = true
	return o.rt.RoundTrip(r)
}

// authKey carries a request's Authorization value to checkRedirect.
type authKey struct{}

// trustedHost is an entry of Options.TrustedHosts: a domain (and its
// subdomains) on one port.
type trustedHost struct{ domain, port string }

// parseTrusted reads "domain[:port]" entries; a missing port is 443.
func parseTrusted(entries []string) ([]trustedHost, error) {
	var out []trustedHost
	for _, e := range entries {
		e = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(e), "."))
		if e == "" {
			continue
		}
		d, port := e, "443"
		if h, p, err := net.SplitHostPort(e); err == nil {
			d, port = h, p
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || d == "" || strings.ContainsAny(d, "/:@?#") {
			return nil, fmt.Errorf("fetch: trusted host %q: want domain[:port]", e)
		}
		out = append(out, trustedHost{domain: d, port: port})
	}
	return out, nil
}

// origin is a URL's scheme, lower-case host and port (the scheme's
// default when none is written).
func origin(u *url.URL) (scheme, host, port string) {
	scheme, host, port = strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	return scheme, host, port
}

// mayAuthorize is the token's rule: the download URL's own origin
// (scheme, host and port), and the trusted hosts: a listed domain or its
// subdomains, over HTTPS (plain HTTP on loopback only, for local
// set-ups), on the entry's port (443 when it names none). Any other port
// of a trusted host may be another service, and gets nothing.
func (f *Fetcher) mayAuthorize(u *url.URL) bool {
	scheme, host, port := origin(u)
	if bs, bh, bp := origin(f.base); scheme == bs && host == bh && port == bp {
		return true
	}
	if scheme != "https" && !(scheme == "http" && loopback(host)) {
		return false
	}
	for _, t := range f.trusted {
		if (host == t.domain || strings.HasSuffix(host, "."+t.domain)) && port == t.port {
			return true
		}
	}
	return false
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkRedirect sets the token on each hop by mayAuthorize: Go's client
// drops it on any other host, including the download host the catalogue
// redirects to, and keeps it on a subdomain whatever the scheme. A hop
// from HTTPS down to HTTP never carries it, whatever the host.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	req.Header.Del("Authorization")
	downgraded := false
	for _, v := range via {
		if v.URL.Scheme == "https" && req.URL.Scheme != "https" {
			downgraded = true
		}
	}
	if auth, _ := req.Context().Value(authKey{}).(string); auth != "" && !downgraded && f.mayAuthorize(req.URL) {
		req.Header.Set("Authorization", auth)
	}
	return nil
}

// SweepPartials removes what unfinished downloads left in the target
// untouched for maxAge (target.Target.SweepPartials), counting them.
func (f *Fetcher) SweepPartials(ctx context.Context, maxAge time.Duration) (int, error) {
	n, err := f.target.SweepPartials(ctx, maxAge)
	f.m.partialsExpired.Add(float64(n))
	return n, err
}

// usable are the checksums the fetcher can check, by algorithm in upper
// case, value in lower-case hex.
func usable(cs []Checksum) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		alg, v := strings.ToUpper(strings.TrimSpace(c.Algorithm)), strings.ToLower(strings.TrimSpace(c.Value))
		if v == "" {
			continue
		}
		if _, err := hex.DecodeString(v); err != nil {
			continue
		}
		if alg == "MD5" || alg == "BLAKE3" {
			out[alg] = v
		}
	}
	return out
}

// entitySums re-reads the product's checksums from the catalogue.
func (f *Fetcher) entitySums(ctx context.Context, id string) (map[string]string, error) {
	if f.o.Entity == nil {
		return map[string]string{}, nil
	}
	raw, err := f.o.Entity(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("re-reading the checksums of %s: %w", id, err)
	}
	var e struct{ Checksum []Checksum }
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("re-reading the checksums of %s: %w", id, err)
	}
	return usable(e.Checksum), nil
}

func stored(id string, size int64, sums map[string]string) target.Stored {
	return target.Stored{Size: size, MD5: sums["MD5"], BLAKE3: sums["BLAKE3"], ProductID: id}
}

// claim records the object s stored at key, the bytes of product id, as
// id's when it records another product: the same product published again
// under a new id, whose old id's deleted event must then find nothing of
// its own to remove (Find).
func (f *Fetcher) claim(ctx context.Context, id, key string, s target.Stored, sums map[string]string) error {
	if s.ProductID == "" || s.ProductID == id {
		return nil
	}
	f.log.WithFields(logrus.Fields{"product": id, "key": key, "stored_for": s.ProductID}).Info("fetch: the same bytes are stored for another id (the product published again): recorded as this one's")
	return f.target.Describe(ctx, key, stored(id, s.Size, sums))
}

// Fetch downloads p into the target under key, verified; progress (may
// be nil) is told where the download is at least every
// Options.ProgressEvery while bytes flow or the Fetch waits.
func (f *Fetcher) Fetch(ctx context.Context, p Product, key string, progress func(Progress)) (res Result, err error) {
	start := time.Now()
	tr := newTracker(p, key, progress, f.log, f.o.LogEvery)
	res = Result{Key: key, URL: f.target.URL(key)}
	f.m.inFlight.Inc()
	defer func() {
		f.m.inFlight.Dec()
		res.Took = time.Since(start)
		f.m.downloads.WithLabelValues(Outcome(res, err)).Inc()
	}()
	if err := target.CheckName(p.Name, key); err != nil {
		return res, err
	}
	if p.Online != nil && !*p.Online {
		return res, fmt.Errorf("%w: %s (%s) is not online", ErrOffline, p.ID, p.Name)
	}
	if len(p.Files) > 0 {
		r, whole, err := f.fetchFiles(ctx, p, key, progress, start)
		if !whole {
			return r, err
		}
		// No manifest to select from: the archive, and why.
		defer func(files *FilesResult) { res.Files = files }(r.Files)
	}
	sums := usable(p.Checksums)
	if len(sums) == 0 {
		if sums, err = f.entitySums(ctx, p.ID); err != nil {
			return res, err
		}
		if len(sums) == 0 && f.o.RequireChecksum {
			return res, fmt.Errorf("%w: %s (%s): no checksum in the notification or the catalogue", ErrUnverifiable, p.ID, p.Name)
		}
	}
	if s, ok, err := f.target.Stat(ctx, key); err != nil {
		return res, err
	} else if ok && len(sums) > 0 && same(s, p, sums) {
		err := f.claim(ctx, p.ID, key, s, sums)
		if err == nil {
			res.AlreadyThere, res.Size, res.Verified = true, s.Size, verified(sums)
			return res, nil
		}
		if ctx.Err() != nil {
			return res, err
		}
		f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).WithError(err).Warn("fetch: the same bytes are stored for another id and cannot be recorded as this one's; downloading them again")
	} else if ok && storedUnverified(s, p, sums) {
		err := f.verifyInPlace(ctx, p, key, s, sums)
		if err == nil {
			res.AlreadyThere, res.VerifiedInPlace, res.Size, res.Verified = true, true, s.Size, verified(sums)
			return res, nil
		}
		if ctx.Err() != nil {
			return res, err
		}
		f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).WithError(err).Warn("fetch: the product stored unverified does not verify in place; downloading it again")
	}

	reread := false
	for {
		res2, err := f.download(ctx, p, key, sums, tr)
		if errors.Is(err, errStoredMeanwhile) {
			res.AlreadyThere, res.Size, res.Verified = true, p.ContentLength, verified(sums)
			if s, ok, _ := f.target.Stat(ctx, key); ok {
				res.Size = s.Size
			}
			return res, nil
		}
		res2.Key, res2.URL = res.Key, res.URL
		res = res2
		var mm *mismatch
		if !errors.As(err, &mm) {
			return res, err
		}
		if reread {
			return res, fmt.Errorf("%w: %s (%s) after re-reading the checksum and downloading again: %w", ErrChecksum, p.ID, p.Name, err)
		}
		reread = true
		f.m.retries.WithLabelValues("checksum").Inc()
		f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).Warnf("fetch: %v; re-reading the checksum and downloading again", err)
		fresh, rerr := f.entitySums(ctx, p.ID)
		if rerr != nil {
			return res, rerr
		}
		if len(fresh) > 0 {
			sums = fresh
		}
	}
}

// same: the stored object is this product's bytes, by size and every
// checksum both sides know (at least one).
func same(s target.Stored, p Product, sums map[string]string) bool {
	if p.ContentLength > 0 && s.Size != p.ContentLength {
		return false
	}
	n := 0
	for alg, v := range map[string]string{"MD5": s.MD5, "BLAKE3": s.BLAKE3} {
		if w, ok := sums[alg]; ok {
			if v != w {
				return false
			}
			n++
		}
	}
	return n > 0
}

func verified(sums map[string]string) []Checksum {
	var out []Checksum
	for _, alg := range []string{"MD5", "BLAKE3"} {
		if v, ok := sums[alg]; ok {
			out = append(out, Checksum{Algorithm: alg, Value: v})
		}
	}
	return out
}

// mismatch is bytes that disagree with a checksum; by says whose
// ("" the catalogue's).
type mismatch struct{ alg, want, got, by string }

func (m *mismatch) Error() string {
	return fmt.Sprintf("%s mismatch: the %s says %s, the bytes are %s", m.alg, cmp.Or(m.by, "catalogue"), m.want, m.got)
}

// hashes are the running checksums of the bytes held.
type hashes struct {
	md5, b3 hash.Hash
	sha3    hash.Hash // only when a SHA3-256 is to be checked (files.go)
}

func newHashes() *hashes { return &hashes{md5: md5.New(), b3: blake3.New()} }

func (h *hashes) Write(p []byte) (int, error) {
	h.md5.Write(p)
	h.b3.Write(p)
	if h.sha3 != nil {
		h.sha3.Write(p)
	}
	return len(p), nil
}

func (h *hashes) sums() map[string]string {
	out := map[string]string{"MD5": hex.EncodeToString(h.md5.Sum(nil)), "BLAKE3": hex.EncodeToString(h.b3.Sum(nil))}
	if h.sha3 != nil {
		out[sha3Name] = hex.EncodeToString(h.sha3.Sum(nil))
	}
	return out
}

// attemptErr is a failed try worth another: its cause (a metric label)
// and the wait the server asked for.
type attemptErr struct {
	cause string
	wait  time.Duration // Retry-After; 0 the backoff's
	err   error
}

func (e *attemptErr) Error() string { return e.err.Error() }
func (e *attemptErr) Unwrap() error { return e.err }

// download is one product's tries into one upload: a cut resumes from the
// bytes held, a 200 to a Range starts over, a mismatch is returned for
// Fetch to re-read the checksum.
func (f *Fetcher) download(ctx context.Context, p Product, key string, sums map[string]string, tr *tracker) (Result, error) {
	var res Result
	up, err := f.open(ctx, p, key, sums, tr)
	if err != nil {
		return res, err
	}
	committed := false
	keep := true // a partial is kept to resume from unless it is wrong
	defer func() {
		if !committed {
			if err := up.Abort(keep); err != nil {
				f.log.WithField("key", key).Warnf("fetch: discarding the partial download: %v", err)
			}
		}
	}()
	h := newHashes()
	h.want(sums)
	if r, err := up.Existing(); err != nil {
		return res, err
	} else if r != nil {
		// The hash state of a partial left by an earlier process is
		// rebuilt by reading it (BLAKE3's hasher cannot be saved).
		tr.wait("re-reading the partial download")
		_, err := io.Copy(h, &progressReader{r: r, every: f.o.ProgressEvery, progress: tr.tick, last: time.Now()})
		r.Close()
		if err != nil {
			return res, fmt.Errorf("fetch: re-reading the partial download of %s: %w", key, err)
		}
	}
	var (
		b        = retry.Backoff{First: f.o.Backoff, Max: f.o.MaxBackoff}
		last     error
		renewed  bool
		attempts int
	)
	// A partial that holds the whole product (a kill -9 during the
	// commit's fsync or rename, a commit that failed) has nothing left to
	// ask for: a Range from its end is answered 416 at every try. It is
	// verified as it is; wrong bytes are discarded below, and Fetch
	// downloads them again.
	// Without a checksum to verify it by, a request's If-Range is the
	// only check of a partial: then it is asked for (416 starts over).
	complete := len(sums) > 0 && p.ContentLength > 0 && up.Held() == p.ContentLength
	if complete {
		res.Resumed = up.Held()
	}
	for !complete {
		if attempts >= f.o.MaxAttempts {
			return res, fmt.Errorf("%w (%d) for %s (%s): %w", ErrAttempts, attempts, p.ID, p.Name, last)
		}
		attempts++
		tok, err := f.tokens.Token(ctx)
		if err != nil {
			return res, fmt.Errorf("fetch: the catalogue token: %w", err)
		}
		from, err := f.try(ctx, p, up, h, tok, tr)
		if err == nil {
			res.Resumed = from
			break
		}
		var ae *attemptErr
		if !errors.As(err, &ae) {
			if Permanent(err) {
				// Never resumed (gone from the catalogue, offline, too
				// large): a partial kept would wait a day for the sweep.
				keep = false
			}
			return res, err
		}
		last = ae
		f.m.retries.WithLabelValues(ae.cause).Inc()
		if ae.cause == "unauthorized" {
			f.tokens.Invalidate(tok)
			if !renewed {
				renewed = true
				continue
			}
		}
		wait := ae.wait
		if wait > 0 {
			// A little more than asked, spread so that fetchers told
			// the same Retry-After do not return at once.
			wait += retry.Jitter(wait / 5)
		} else {
			wait = b.Next()
		}
		if wait > f.o.MaxHold {
			// Not slept here holding a download slot (and, past the
			// ack wait, the product's message, which another replica
			// would then download too): handed back with the wait.
			return res, &DeferError{Wait: wait, Err: ae}
		}
		f.log.WithFields(logrus.Fields{"product": p.ID, "key": key, "attempt": attempts}).Infof("fetch: %v; again in %v", ae.err, wait.Round(time.Millisecond))
		tr.wait(fmt.Sprintf("retrying in %v", wait.Round(time.Second)))
		if err := f.sleep(ctx, wait, tr.tick); err != nil {
			return res, fmt.Errorf("fetch %s: %w (last: %w)", p.ID, err, last)
		}
	}

	size := up.Held()
	if p.ContentLength > 0 && size != p.ContentLength {
		// try checks it; kept as a guard.
		return res, fmt.Errorf("fetch %s: %d bytes where the catalogue says %d", p.ID, size, p.ContentLength)
	}
	got := h.sums()
	for _, alg := range []string{"MD5", "BLAKE3", sha3Name} {
		if want, ok := sums[alg]; ok && want != got[alg] {
			keep = false
			f.m.verifyFailures.WithLabelValues(alg).Inc()
			return res, &mismatch{alg: alg, want: want, got: got[alg], by: p.checksumsBy()}
		}
	}
	res.Size, res.Verified = size, verified(sums)
	if len(sums) == 0 {
		res.Unverified = "no checksum in the notification or the catalogue"
	}
	// What is stored beside the object: the checksums checked, else the
	// ones computed (a second Fetch still finds it by size alone then).
	st := stored(p.storedID(), size, sums)
	if len(sums) == 0 {
		st = stored(p.storedID(), size, nil)
	}
	if err := up.Commit(ctx, st); err != nil {
		return res, err
	}
	committed = true
	return res, nil
}

// open opens the upload of key; while another fetch holds it (a
// redelivery of the product whose first delivery still runs) it waits,
// keeping its own work alive, up to LockWait: by then the other has
// stored the product (ErrStoredMeanwhile, for Fetch to find it there),
// or has gone silent past the ack wait and its lock is taken over.
func (f *Fetcher) open(ctx context.Context, p Product, key string, sums map[string]string, tr *tracker) (target.Upload, error) {
	if up := p.memory(); up != nil {
		return up, nil // a manifest, read into memory (files.go)
	}
	deadline := time.Now().Add(f.o.LockWait)
	storedNow := func() bool {
		s, ok, err := f.target.Stat(ctx, key)
		return err == nil && ok && len(sums) > 0 && same(s, p, sums)
	}
	for waited := false; ; waited = true {
		up, err := f.target.Open(ctx, key, p.ContentLength, stored(p.storedID(), p.ContentLength, sums))
		if err == nil && waited && storedNow() {
			// The other fetch committed as the lock came free.
			up.Abort(false)
			return nil, errStoredMeanwhile
		}
		if !errors.Is(err, target.ErrLocked) {
			return up, err
		}
		if storedNow() {
			return nil, errStoredMeanwhile
		}
		if time.Now().After(deadline) {
			f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).Warnf("fetch: the partial download has been locked for %v (FETCH_ACK_WAIT) by a fetch that no longer holds the product's message; taking it over", f.o.LockWait)
			return f.target.Open(ctx, key, p.ContentLength, stored(p.storedID(), p.ContentLength, sums), target.TakeOver)
		}
		tr.wait("another fetch of the same key holds its lock")
		if err := f.sleep(ctx, min(time.Second, time.Until(deadline)+time.Millisecond), tr.tick); err != nil {
			return nil, fmt.Errorf("fetch %s: waiting for the other fetch of %s: %w", p.ID, key, err)
		}
	}
}

var errStoredMeanwhile = errors.New("stored by another fetch meanwhile")

// try is one request: it appends the body to up (from up.Held(), with
// Range when some is held) until the product is whole, and says from
// which byte the body it read began (the bytes resumed); an *attemptErr
// is worth another try.
func (f *Fetcher) try(ctx context.Context, p Product, up target.Upload, h *hashes, tok *oauth2.Token, tr *tracker) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	u := f.valueURL(p)
	auth := tok.Type() + " " + tok.AccessToken
	req, err := http.NewRequestWithContext(context.WithValue(ctx, authKey{}, auth), http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("fetch %s: %w", p.ID, err)
	}
	if f.mayAuthorize(req.URL) {
		req.Header.Set("Authorization", auth)
	}
	// The bytes as stored, never compressed in transit: Go would inflate
	// a gzip answer transparently, and 1 MB of gzip can be 1 GiB.
	req.Header.Set("Accept-Encoding", "identity")
	held := up.Held()
	if held > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(held, 10)+"-")
		if et := up.ETag(); et != "" {
			req.Header.Set("If-Range", et)
		}
	}
	// The idle timer covers the wait for the headers too.
	idle := time.AfterFunc(f.o.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == errIdle {
			return 0, &attemptErr{cause: "idle", err: fmt.Errorf("fetch %s: no answer for %v", p.ID, f.o.IdleTimeout)}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("fetch %s: %w", p.ID, err)
		}
		return 0, &attemptErr{cause: "network", err: fmt.Errorf("fetch %s: %w", p.ID, err)}
	}
	defer resp.Body.Close()
	if err := f.status(p, resp); err != nil {
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && held > 0 {
			// Nothing past the bytes held (a whole partial of a product
			// whose length was not given, or a product that shrank):
			// the next try starts over.
			if rerr := f.restart(ctx, up, h); rerr != nil {
				return 0, rerr
			}
		}
		return 0, err
	}
	if ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); ce != "" && ce != "identity" {
		return 0, &attemptErr{cause: "encoding", err: fmt.Errorf("fetch %s: the answer has Content-Encoding %q where only identity was accepted", p.ID, ce)}
	}
	from := int64(0)
	if resp.StatusCode == http.StatusPartialContent && held > 0 {
		from = held
		first, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || first != held || (p.ContentLength > 0 && total != p.ContentLength) {
			// Not the range asked for: start over with the whole.
			if err := f.restart(ctx, up, h); err != nil {
				return 0, err
			}
			return 0, &attemptErr{cause: "range", err: fmt.Errorf("fetch %s: answer to Range bytes=%d- has Content-Range %q", p.ID, held, resp.Header.Get("Content-Range"))}
		}
	} else if held > 0 {
		// 200: the whole product again.
		if err := f.restart(ctx, up, h); err != nil {
			return 0, err
		}
	}
	if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") && et != up.ETag() {
		if err := up.SetETag(et); err != nil {
			return 0, fmt.Errorf("fetch %s: %w", p.ID, err)
		}
	}

	tr.begin(up.Held())
	body := &progressReader{r: resp.Body, every: f.o.ProgressEvery, progress: tr.tick, last: time.Now(), idle: idle, idleFor: f.o.IdleTimeout}
	// One byte more than expected is enough to know there are more.
	limit := cmp.Or(p.ContentLength, f.o.MaxUnknownSize)
	src := io.LimitReader(body, limit-up.Held()+1)
	// 256 KiB a read: fewer wake-ups and system calls a MB than 32 KiB
	// (the hashes and the target take whatever size).
	buf := make([]byte, 256<<10)
	win := rateWindow{start: time.Now(), every: f.o.MinRateWindow, min: f.o.MinRate}
	for {
		n, rerr := src.Read(buf)
		if win.slow(n, time.Now()) {
			return 0, fmt.Errorf("%w: %s (%s): fewer than %d bytes a second over %v (FETCH_MIN_RATE) after %d bytes", ErrTooSlow, p.ID, p.Name, f.o.MinRate, f.o.MinRateWindow, up.Held())
		}
		if n > 0 {
			if up.Held()+int64(n) > limit {
				if p.ContentLength > 0 {
					return 0, fmt.Errorf("%w: %s (%s) is more than %d bytes", ErrTooLarge, p.ID, p.Name, p.ContentLength)
				}
				return 0, fmt.Errorf("%w: %s (%s) has no length in its notification and is more than %d bytes (FETCH_MAX_UNKNOWN_SIZE)", ErrTooLarge, p.ID, p.Name, limit)
			}
			// The idle timer measures the download service, not the
			// target: a slow S3 part upload must not cut the download.
			idle.Stop()
			_, err := up.Write(buf[:n])
			idle.Reset(f.o.IdleTimeout)
			if err != nil && errors.Is(err, target.ErrNoSpace) && p.ContentLength <= 0 {
				// Without a length there is no telling that the
				// product would ever fit: not a pause, a failure.
				return 0, fmt.Errorf("%w: %s (%s) has no length in its notification and reached the target's free space: %w", ErrTooLarge, p.ID, p.Name, err)
			}
			if err != nil {
				return 0, fmt.Errorf("fetch %s: writing to the target: %w", p.ID, err)
			}
			h.Write(buf[:n])
			f.m.bytes.Add(float64(n))
			p.counted(n)
			tr.held(up.Held())
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if context.Cause(ctx) == errIdle {
				return 0, &attemptErr{cause: "idle", err: fmt.Errorf("fetch %s: no byte for %v after %d", p.ID, f.o.IdleTimeout, up.Held())}
			}
			if ctx.Err() != nil {
				return 0, fmt.Errorf("fetch %s: %w", p.ID, ctx.Err())
			}
			return 0, &attemptErr{cause: "cut", err: fmt.Errorf("fetch %s: the download broke off after %d bytes: %w", p.ID, up.Held(), rerr)}
		}
	}
	if p.ContentLength > 0 && up.Held() < p.ContentLength {
		return 0, &attemptErr{cause: "cut", err: fmt.Errorf("fetch %s: the download ended at %d of %d bytes", p.ID, up.Held(), p.ContentLength)}
	}
	return from, nil
}

var errIdle = errors.New("idle timeout")

// sleep waits d or until ctx ends, calling progress as the wait goes on:
// a wait is work of the Fetch's, which its caller keeps alive.
func (f *Fetcher) sleep(ctx context.Context, d time.Duration, progress func()) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := retry.Sleep(ctx, min(left, f.o.ProgressEvery)); err != nil {
			return err
		}
		progress()
	}
}

// DeferError is a Fetch that should be tried again after Wait (the
// download service's Retry-After), longer than Options.MaxHold: its
// partial is kept.
type DeferError struct {
	Wait time.Duration
	Err  error
}

func (e *DeferError) Error() string {
	return fmt.Sprintf("%v; to be tried again in %v", e.Err, e.Wait.Round(time.Second))
}
func (e *DeferError) Unwrap() error { return e.Err }

// restart drops the held bytes and their hash state.
func (f *Fetcher) restart(ctx context.Context, up target.Upload, h *hashes) error {
	if err := up.Restart(ctx); err != nil {
		return err
	}
	h.md5.Reset()
	h.b3.Reset()
	if h.sha3 != nil {
		h.sha3.Reset()
	}
	return nil
}

// status turns a response that is not the product into its error.
func (f *Fetcher) status(p Product, resp *http.Response) error {
	code := resp.StatusCode
	if code == http.StatusOK || code == http.StatusPartialContent {
		return nil
	}
	// A short excerpt of the service's message, never the request (the
	// token is in its headers).
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := fmt.Sprintf("fetch %s (%s): %s: %s", p.ID, p.Name, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case code == http.StatusNotFound || code == http.StatusGone:
		return fmt.Errorf("%w: %s", ErrNotFound, detail)
	case code == http.StatusConflict:
		return fmt.Errorf("%w: %s", ErrOffline, detail)
	case code == http.StatusUnauthorized:
		return &attemptErr{cause: "unauthorized", err: errors.New(detail)}
	case code == http.StatusTooManyRequests:
		wait, _ := retry.RetryAfter(resp.Header.Get("Retry-After"), time.Now(), f.o.MaxRetryAfter)
		return &attemptErr{cause: "throttled", wait: wait, err: errors.New(detail)}
	case code == http.StatusRequestedRangeNotSatisfiable:
		return &attemptErr{cause: "range", err: errors.New(detail)}
	case code >= 500 || code == http.StatusRequestTimeout:
		wait, _ := retry.RetryAfter(resp.Header.Get("Retry-After"), time.Now(), f.o.MaxRetryAfter)
		return &attemptErr{cause: "server", wait: wait, err: errors.New(detail)}
	default:
		return errors.New(detail)
	}
}

// contentRange reads "bytes first-last/total".
func contentRange(h string) (first, total int64, ok bool) {
	rest, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	a, _, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	total, err2 := strconv.ParseInt(tot, 10, 64)
	if tot == "*" {
		total, err2 = 0, nil
	}
	return first, total, err1 == nil && err2 == nil
}

// rateWindow averages the bytes read over windows of every: slow says a
// window has ended below min bytes a second (min 0: never).
type rateWindow struct {
	start time.Time
	every time.Duration
	min   int64
	bytes int64
}

func (w *rateWindow) slow(n int, now time.Time) bool {
	w.bytes += int64(n)
	if w.min <= 0 || now.Sub(w.start) < w.every {
		return false
	}
	if float64(w.bytes) < float64(w.min)*now.Sub(w.start).Seconds() {
		return true
	}
	w.start, w.bytes = now, 0
	return false
}

// progressReader calls progress at most every `every` while bytes flow,
// and pushes the idle timer back on each byte.
type progressReader struct {
	r        io.Reader
	every    time.Duration
	progress func()
	last     time.Time
	idle     *time.Timer
	idleFor  time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		if p.idle != nil {
			p.idle.Reset(p.idleFor)
		}
		if now := time.Now(); now.Sub(p.last) >= p.every {
			p.last = now
			p.progress()
		}
	}
	return n, err
}

// Outcome is a Fetch's outcome as the cdse_fetch_downloads_total label
// names it: ok, unverified, already_there, or why it failed.
func Outcome(res Result, err error) string {
	switch {
	case err == nil && res.AlreadyThere:
		return "already_there"
	case err == nil && res.Unverified != "":
		return "unverified"
	case err == nil:
		return "ok"
	case errors.Is(err, ErrOffline):
		return "offline"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrChecksum):
		return "checksum"
	case errors.Is(err, ErrUnverifiable):
		return "unverifiable"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, target.ErrTargetTooSmall):
		return "target_too_small"
	case errors.Is(err, target.ErrNoSpace):
		return "no_space"
	case errors.Is(err, target.ErrBadName):
		return "bad_name"
	case errors.Is(err, target.ErrTargetRefused):
		return "target_refused"
	case errors.Is(err, ErrAttempts):
		return "attempts"
	case errors.Is(err, ErrTooSlow):
		return "too_slow"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "error"
	}
}

// RangeSupport asks the download service for the first byte of product
// id with Range and If-Range-free, as a resume asks for the rest, and says
// how it answered: 206 with a Content-Range (a cut download resumes) or 200
// (it sends the product whole: a cut one starts over), or anything else as
// an error. The body is closed after the headers (a 200 is not read). auth
// is the Authorization value, sent to downloadURL's host only: a redirect
// is reported, not followed. `register doctor` runs it against the live
// service, whose Range support is not documented.
func RangeSupport(ctx context.Context, client *http.Client, downloadURL, auth, id string) (status int, detail string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	u := strings.TrimRight(downloadURL, "/") + "/Products(" + url.PathEscape(id) + ")/$value"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Range", "bytes=0-0")
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
		first, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || first != 0 {
			return code, "", fmt.Errorf("206 with Content-Range %q, not bytes 0-0/<size>", resp.Header.Get("Content-Range"))
		}
		return code, fmt.Sprintf("ranges served (Content-Range of %d bytes, ETag %q): a cut download resumes", total, resp.Header.Get("ETag")), nil
	case code == http.StatusOK:
		return code, "Range ignored, the product sent whole: a cut download starts over", nil
	case code >= 300 && code < 400:
		// The host only: a redirect's query may carry a signature.
		host := "?"
		if loc, err := resp.Location(); err == nil {
			host = loc.Scheme + "://" + loc.Host
		}
		return code, "redirected to " + host + " (the fetcher follows, with the token only to trusted hosts)", nil
	default:
		return code, "", fmt.Errorf("%s", resp.Status)
	}
}
