package cdsesim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The download service: GET (or HEAD) {DownloadURL}/Products(<Id>)/$value
// with the bearer token, as the live download.dataspace.copernicus.eu
// answers it (docs/registering.md lists what it does): deterministic bytes
// of the product's ContentLength, each response throttled like one live
// connection, a cap of concurrent downloads per user, Range on or off, a
// redirect from the catalogue host, and the faults users of the live
// service report.

// FaultKind is a fault the download service can show.
type FaultKind string

// The faults.
const (
	// FaultStatus answers Status (429, 500, 502, 503, ...) instead of the
	// product, with Retry-After: RetryAfter seconds when set (429: 1 by
	// default).
	FaultStatus FaultKind = "status"
	// FaultCut cuts the connection after After bytes of the body.
	FaultCut FaultKind = "cut"
	// FaultCorrupt flips the byte at Offset of the product in the bytes
	// sent (the listed checksums stay the true ones).
	FaultCorrupt FaultKind = "corrupt"
	// FaultTokenExpiry expires the request's access token after After
	// bytes of the body and cuts the connection, as when the token runs
	// out mid-download: the next request with that token gets 401.
	FaultTokenExpiry FaultKind = "tokenExpiry"
)

// Fault is one fault of the download service.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Product is the product id it applies to; "" every product.
	Product    string `json:"product,omitempty"`
	Status     int    `json:"status,omitempty"`
	RetryAfter int    `json:"retryAfter,omitempty"` // seconds
	After      int64  `json:"after,omitempty"`      // body bytes before a cut
	Offset     int64  `json:"offset,omitempty"`     // product byte to corrupt
	// Count is how many requests it hits before it is gone; 0 every
	// request until ClearFaults.
	Count int `json:"count,omitempty"`
	// Rate is the chance it hits a request it could hit (0: always),
	// drawn from Options.Seed.
	Rate float64 `json:"rate,omitempty"`
}

func (f Fault) validate() error {
	switch f.Kind {
	case FaultStatus:
		if f.Status < 400 || f.Status > 599 {
			return fmt.Errorf("fault status: status %d is not 4xx or 5xx", f.Status)
		}
	case FaultCut, FaultTokenExpiry:
		if f.After < 0 {
			return fmt.Errorf("fault %s: after %d < 0", f.Kind, f.After)
		}
	case FaultCorrupt:
		if f.Offset < 0 {
			return fmt.Errorf("fault corrupt: offset %d < 0", f.Offset)
		}
	default:
		return fmt.Errorf("fault kind %q: one of status, cut, corrupt, tokenExpiry", f.Kind)
	}
	if f.Count < 0 || f.RetryAfter < 0 || f.Rate < 0 || f.Rate > 1 {
		return errors.New("fault: count and retryAfter at least 0, rate between 0 and 1")
	}
	return nil
}

// UserDownloads are one user's downloads.
type UserDownloads struct {
	Active int `json:"active"` // in flight now
	// Peak is the highest number of this user's downloads in flight at
	// once, counting a request refused for the cap as it arrived: a client
	// that keeps to the cap shows at most MaxDownloads.
	Peak     int   `json:"peak"`
	Begun    int64 `json:"begun"`    // bodies begun (200 or 206)
	Complete int64 `json:"complete"` // sent whole
	Bytes    int64 `json:"bytes"`
	Refused  int64 `json:"refused"` // 429 for the cap
}

// ProductDownloads are what was sent of one product: its archive
// ($value) and the files of its tree (Nodes(...)/$value).
type ProductDownloads struct {
	Archives     int64 `json:"archives"` // archive bodies begun
	ArchiveBytes int64 `json:"archiveBytes"`
	Files        int64 `json:"files"` // file bodies begun
	FileBytes    int64 `json:"fileBytes"`
}

// DownloadStats are the download service's counters.
type DownloadStats struct {
	Peak  int                      `json:"peak"` // the highest of the users' peaks
	Users map[string]UserDownloads `json:"users"`
	// Products: bytes sent by product id, archive and files apart.
	Products map[string]ProductDownloads `json:"products"`
}

// DownloadRecord is one $value request, as the simulator answered it.
type DownloadRecord struct {
	At      time.Time `json:"at"`   // the simulator's clock at the request
	Done    time.Time `json:"done"` // and when its answer ended
	User    string    `json:"user,omitempty"`
	Product string    `json:"product"`
	// File is the path of the file of the product's tree a Nodes
	// request asked for ("GRANULE/.../MTD_TL.xml"); "" for the archive.
	File     string `json:"file,omitempty"`
	Host     string `json:"host"`
	Method   string `json:"method"`
	Range    string `json:"range,omitempty"`   // the request's Range
	IfRange  string `json:"ifRange,omitempty"` // and If-Range
	Status   int    `json:"status"`
	Bytes    int64  `json:"bytes"` // body bytes sent
	Complete bool   `json:"complete"`
	Fault    string `json:"fault,omitempty"` // what was injected, or "token expired"
}

// maxRecords bounds the log of download requests.
const maxRecords = 10000

type faultEntry struct {
	Fault
	left int // requests left when Count > 0
}

// downloads is the download service's state; its own lock, so a listing
// never waits on a download or the reverse.
type downloads struct {
	begun, complete, bytes, refused, faulted atomic.Int64
	fileBegun, fileBytes                     atomic.Int64 // of them, Nodes file requests

	mu       sync.Mutex
	url      string // OData root of the download host ("": none)
	host     string
	redirect int
	rate     int64 // bytes/s per response; <= 0 unthrottled
	ranges   bool
	max      int   // per user; <= 0 no cap
	fixedLen int64 // > 0: every generated product's size
	lengthFn func(Mission) int64
	faults   []*faultEntry
	users    map[string]*UserDownloads
	products map[string]*ProductDownloads
	log      []DownloadRecord
	rng      *rand.Rand
}

func (d *downloads) init(o Options) {
	d.url = strings.TrimSuffix(o.DownloadURL, "/")
	if u, err := url.Parse(d.url); err == nil {
		d.host = u.Host
	}
	d.redirect = o.RedirectStatus
	d.rate = o.DownloadRate
	if d.rate == 0 {
		d.rate = defaultDownloadRate
	}
	d.ranges = !o.NoRange
	d.max = o.MaxDownloads
	if d.max == 0 {
		d.max = defaultMaxDownloads
	}
	d.lengthFn = o.ContentLength
	d.users = map[string]*UserDownloads{}
	d.products = map[string]*ProductDownloads{}
	d.rng = rand.New(rand.NewPCG(cmp.Or(o.Seed, uint64(time.Now().UnixNano())), 31)) // as the rest: 0 is the clock
	for _, f := range o.Faults {
		if err := f.validate(); err != nil {
			panic("cdsesim: Options.Faults: " + err.Error())
		}
		d.faults = append(d.faults, &faultEntry{Fault: f, left: f.Count})
	}
}

// contentLength is the size of a new product of mission m, or -1 for the
// generator's own.
func (s *Sim) contentLength(m Mission) int64 {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	switch {
	case s.dl.fixedLen > 0:
		return s.dl.fixedLen
	case s.dl.lengthFn != nil:
		return max(0, s.dl.lengthFn(m))
	}
	return -1
}

// SetDownloadRate sets each download's rate in bytes/s from the next
// response on (<= 0: unthrottled).
func (s *Sim) SetDownloadRate(bytesPerSecond int64) {
	s.dl.mu.Lock()
	s.dl.rate = bytesPerSecond
	s.dl.mu.Unlock()
}

// SetRanges turns Range support on (206) or off (200 and the whole body).
func (s *Sim) SetRanges(on bool) {
	s.dl.mu.Lock()
	s.dl.ranges = on
	s.dl.mu.Unlock()
}

// SetMaxDownloads sets the concurrent downloads per user (<= 0: no cap).
func (s *Sim) SetMaxDownloads(n int) {
	s.dl.mu.Lock()
	s.dl.max = n
	s.dl.mu.Unlock()
}

// SetContentLength makes every product generated from now on n bytes
// long (0: back to Options.ContentLength or the default sizes).
func (s *Sim) SetContentLength(n int64) {
	s.dl.mu.Lock()
	s.dl.fixedLen = n
	s.dl.mu.Unlock()
}

// AddFault adds a fault of the download service.
func (s *Sim) AddFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.dl.mu.Lock()
	s.dl.faults = append(s.dl.faults, &faultEntry{Fault: f, left: f.Count})
	s.dl.mu.Unlock()
	return nil
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.dl.mu.Lock()
	s.dl.faults = nil
	s.dl.mu.Unlock()
}

// Faults returns the faults in force, with Count the requests left.
func (s *Sim) Faults() []Fault {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	out := make([]Fault, len(s.dl.faults))
	for i, f := range s.dl.faults {
		out[i] = f.Fault
		out[i].Count = f.left
	}
	return out
}

// DownloadStats returns the per-user download counters and peaks.
func (s *Sim) DownloadStats() DownloadStats {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	st := DownloadStats{Users: map[string]UserDownloads{}, Products: map[string]ProductDownloads{}}
	for u, c := range s.dl.users {
		st.Users[u] = *c
		st.Peak = max(st.Peak, c.Peak)
	}
	for id, c := range s.dl.products {
		st.Products[id] = *c
	}
	return st
}

// ProductDownloads returns what was sent of product id: of its archive
// and of the files of its tree ("bytes fetched").
func (s *Sim) ProductDownloads(id string) ProductDownloads {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	if c := s.dl.products[id]; c != nil {
		return *c
	}
	return ProductDownloads{}
}

// peak is the highest of the users' peaks.
func (d *downloads) peak() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := 0
	for _, c := range d.users {
		p = max(p, c.Peak)
	}
	return p
}

// DownloadLog returns the $value requests answered so far, oldest first
// (the last 10 000).
func (s *Sim) DownloadLog() []DownloadRecord {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	return slices.Clone(s.dl.log)
}

// take returns the first fault of kind for product id that hits this
// request (hits(f) says whether it can), consuming one of its Count.
// Called with d.mu held.
func (d *downloads) take(id string, kind FaultKind, hits func(Fault) bool) (Fault, bool) {
	for i, f := range d.faults {
		if f.Kind != kind || (f.Product != "" && f.Product != id) || !hits(f.Fault) {
			continue
		}
		if f.Rate > 0 && f.Rate < 1 && d.rng.Float64() >= f.Rate {
			continue
		}
		if f.Count > 0 {
			if f.left--; f.left <= 0 {
				d.faults = slices.Delete(d.faults, i, i+1)
			}
		}
		return f.Fault, true
	}
	return Fault{}, false
}

// entry returns m[key], made on first use.
func entry[T any](m map[string]*T, key string) *T {
	c := m[key]
	if c == nil {
		c = new(T)
		m[key] = c
	}
	return c
}

// user returns the counters of user. d.mu held.
func (d *downloads) user(name string) *UserDownloads { return entry(d.users, name) }

// product returns the counters of product id. d.mu held.
func (d *downloads) product(id string) *ProductDownloads { return entry(d.products, id) }

// acquire takes one of the user's download slots, or reports the cap.
func (d *downloads) acquire(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.user(name)
	c.Active++
	c.Peak = max(c.Peak, c.Active)
	if d.max > 0 && c.Active > d.max {
		c.Active--
		c.Refused++
		d.refused.Add(1)
		return false
	}
	return true
}

func (d *downloads) release(name string) {
	d.mu.Lock()
	d.user(name).Active--
	d.mu.Unlock()
}

// bearer returns the request's access token, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bearer ") {
		return ""
	}
	return strings.TrimPrefix(h, "Bearer ")
}

// tokenActive reports whether the access token is still valid at the
// simulator's clock: a download checks it at each chunk.
func (s *Sim) tokenActive(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	return ok && !t.refresh && s.o.Now().Before(t.expiry)
}

// expireToken ends the access token now.
func (s *Sim) expireToken(tok string) {
	s.mu.Lock()
	if t, ok := s.tokens[tok]; ok {
		t.expiry = s.o.Now()
		s.tokens[tok] = t
	}
	s.mu.Unlock()
}

// downloadError writes an error in the catalogue's detail shape.
func downloadError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": map[string]any{"message": msg, "request_id": newToken()}})
}

// parseRange reads a single byte range of a body of n bytes. ok is false
// when there is none the server must honour (absent, malformed or several
// ranges: the whole body is then a valid answer); unsat when it lies
// wholly past the end (416).
func parseRange(h string, n int64) (start, length int64, ok, unsat bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if a == "" { // the last b bytes
		k, err := strconv.ParseInt(b, 10, 64)
		if err != nil || k <= 0 {
			return 0, 0, false, k == 0 && err == nil
		}
		if n == 0 {
			return 0, 0, false, true
		}
		start = max(0, n-k)
		return start, n - start, true, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first < 0 {
		return 0, 0, false, false
	}
	last := n - 1
	if b != "" {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
			return 0, 0, false, false
		}
	}
	if first >= n {
		return 0, 0, false, true
	}
	last = min(last, n-1)
	return first, last - first + 1, true, false
}

// body is what a $value request serves: the product's archive or one
// file of its tree.
type body struct {
	size     int64
	etag     string
	filename string
	read     func(off, n int64) io.Reader
}

// valuePath is the path, under the OData root, of the archive (node
// nil) or of a file of the tree: /Products(<id>)/Nodes(<a>)/.../$value.
func valuePath(id string, node []string) string {
	var b strings.Builder
	b.WriteString("/Products(" + id + ")")
	for _, el := range node {
		b.WriteString("/Nodes(" + el + ")")
	}
	b.WriteString("/$value")
	return b.String()
}

// bodyOf returns the archive of p (node nil) or its file at node
// (<Name>, then the path in the tree), or the status and message of a
// node that is no file: 404 for none, 403 for a folder (nodes.go).
func bodyOf(p *Product, node []string) (body, int, string) {
	if node == nil {
		return body{size: p.ContentLength, etag: p.etag(), filename: strings.TrimSuffix(p.Name, ".SAFE") + ".zip",
			read: p.reader}, 0, ""
	}
	t, _ := p.treeState(false)
	path := strings.Join(node[1:], "/")
	if t == nil || node[0] != p.Name {
		return body{}, http.StatusNotFound, "Node " + strings.Join(node, "/") + " not found"
	}
	i := t.find(path)
	if i < 0 {
		if len(node) == 1 || t.countChildren(path) > 0 {
			return body{}, http.StatusForbidden, "Node " + strings.Join(node, "/") + " is a folder: list it with /Nodes"
		}
		return body{}, http.StatusNotFound, "Node " + strings.Join(node, "/") + " not found"
	}
	size := t.files[i].size
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s", p.ID, p.ContentLength, path))
	return body{size: size, etag: `"` + hex.EncodeToString(h[:12]) + `"`, filename: node[len(node)-1],
		read: func(off, n int64) io.Reader {
			t, ts := p.treeState(true)
			return t.fileReader(p.ID, ts, i, off, n)
		}}, 0, ""
}

// handleValue serves GET and HEAD .../Products(<id>)/$value, and with
// node a file of the product's tree, .../Products(<id>)/Nodes(<Name>)/
// Nodes(<a>)/.../$value: the same redirect, token, faults, Range and
// cap of concurrent downloads (a file request takes a slot like an
// archive's).
func (s *Sim) handleValue(w http.ResponseWriter, r *http.Request, id string, node []string) {
	rec := DownloadRecord{At: s.o.Now(), Product: id, Host: r.Host, Method: r.Method, Range: r.Header.Get("Range"), IfRange: r.Header.Get("If-Range")}
	if len(node) > 1 {
		rec.File = strings.Join(node[1:], "/")
	}
	defer func() {
		rec.Done = s.o.Now()
		s.dl.mu.Lock()
		if len(s.dl.log) >= maxRecords {
			s.dl.log = slices.Delete(s.dl.log, 0, len(s.dl.log)-maxRecords+1)
		}
		s.dl.log = append(s.dl.log, rec)
		s.dl.mu.Unlock()
	}()
	s.dl.mu.Lock()
	dlURL, dlHost, redirect := s.dl.url, s.dl.host, s.dl.redirect
	rateBps, ranges := s.dl.rate, s.dl.ranges
	s.dl.mu.Unlock()

	// The catalogue host only points at the download host, before any
	// check of the token, as the live one does: a client that follows
	// the redirect must send the token again (Go's http.Client does not).
	if dlURL != "" && !strings.EqualFold(r.Host, dlHost) {
		w.Header().Set("Location", dlURL+valuePath(id, node))
		w.WriteHeader(redirect)
		rec.Status = redirect
		return
	}
	tok := bearer(r)
	user := s.authenticate(r)
	rec.User = user
	if user == "" {
		rec.Status = http.StatusUnauthorized
		downloadError(w, http.StatusUnauthorized, "Invalid or expired token")
		return
	}
	p, ok := s.liveProduct(w, id)
	if !ok {
		rec.Status = http.StatusNotFound
		return
	}
	if p.Offline {
		// Not documented for OData: offline products "cannot be
		// downloaded" and must be ordered; a 409 says so without
		// pretending it is the client's or a transient fault.
		rec.Status = http.StatusConflict
		downloadError(w, http.StatusConflict, "Product "+id+" is offline; order it first")
		return
	}
	b, code, msg := bodyOf(p, node)
	if code != 0 {
		rec.Status = code
		downloadError(w, code, msg)
		return
	}
	s.dl.mu.Lock()
	f, hit := s.dl.take(id, FaultStatus, func(Fault) bool { return true })
	s.dl.mu.Unlock()
	if hit {
		s.dl.faulted.Add(1)
		rec.Status, rec.Fault = f.Status, "status "+strconv.Itoa(f.Status)
		ra := f.RetryAfter
		if ra == 0 && f.Status == http.StatusTooManyRequests {
			ra = 1
		}
		if ra > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ra))
		}
		downloadError(w, f.Status, http.StatusText(f.Status)+" (simulated)")
		return
	}

	size := b.size
	start, length, status := int64(0), size, http.StatusOK
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+b.filename+`"`)
	h.Set("ETag", b.etag)
	if ranges {
		h.Set("Accept-Ranges", "bytes")
		ifRange := r.Header.Get("If-Range")
		if rg := r.Header.Get("Range"); rg != "" && (ifRange == "" || ifRange == b.etag) {
			st, n, ok, unsat := parseRange(rg, size)
			switch {
			case unsat:
				h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
				rec.Status = http.StatusRequestedRangeNotSatisfiable
				downloadError(w, http.StatusRequestedRangeNotSatisfiable, "Range not satisfiable")
				return
			case ok:
				start, length, status = st, n, http.StatusPartialContent
				h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", st, st+n-1, size))
			}
		}
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	if r.Method == http.MethodHead {
		rec.Status = status
		w.WriteHeader(status)
		return
	}
	if !s.dl.acquire(user) {
		rec.Status, rec.Fault = http.StatusTooManyRequests, "concurrency cap"
		for _, k := range []string{"Content-Length", "Content-Range", "Content-Disposition", "ETag"} {
			h.Del(k)
		}
		h.Set("Retry-After", "1")
		downloadError(w, http.StatusTooManyRequests, "Too many concurrent downloads")
		return
	}
	defer s.dl.release(user)

	// The body faults that fall within this response.
	cutAt, expireAt, corruptAt := int64(-1), int64(-1), int64(-1)
	s.dl.mu.Lock()
	if f, ok := s.dl.take(id, FaultCut, func(f Fault) bool { return f.After < length }); ok {
		cutAt, rec.Fault = f.After, fmt.Sprintf("cut after %d", f.After)
	}
	if f, ok := s.dl.take(id, FaultTokenExpiry, func(f Fault) bool { return f.After < length }); ok {
		expireAt, rec.Fault = f.After, strings.TrimSpace(rec.Fault+fmt.Sprintf(" token expiry after %d", f.After))
	}
	if f, ok := s.dl.take(id, FaultCorrupt, func(f Fault) bool { return f.Offset >= start && f.Offset < start+length }); ok {
		corruptAt, rec.Fault = f.Offset, strings.TrimSpace(rec.Fault+fmt.Sprintf(" corrupt byte %d", f.Offset))
	}
	s.dl.mu.Unlock()
	if rec.Fault != "" {
		s.dl.faulted.Add(1)
	}

	rec.Status = status
	s.dl.begun.Add(1)
	if node != nil {
		s.dl.fileBegun.Add(1)
	}
	s.dl.mu.Lock()
	s.dl.user(user).Begun++
	if node != nil {
		s.dl.product(id).Files++
	} else {
		s.dl.product(id).Archives++
	}
	s.dl.mu.Unlock()
	w.WriteHeader(status)

	// Each chunk waits for the response's own token bucket (one live
	// connection's rate), so concurrent downloads overlap as they do
	// live; the bucket holds one chunk, so no burst beyond it.
	chunk := 32 << 10
	var lim *rate.Limiter
	if rateBps > 0 {
		chunk = int(max(1, min(int64(chunk), rateBps/8)))
		lim = rate.NewLimiter(rate.Limit(rateBps), chunk)
	}
	buf := make([]byte, chunk)
	content := b.read(start, length)
	var sent int64
	account := func(n int) {
		sent += int64(n)
		rec.Bytes = sent
		s.dl.bytes.Add(int64(n))
		if node != nil {
			s.dl.fileBytes.Add(int64(n))
		}
		s.dl.mu.Lock()
		s.dl.user(user).Bytes += int64(n)
		if node != nil {
			s.dl.product(id).FileBytes += int64(n)
		} else {
			s.dl.product(id).ArchiveBytes += int64(n)
		}
		s.dl.mu.Unlock()
	}
	cut := func(why string) {
		if why != "" {
			rec.Fault = strings.TrimSpace(rec.Fault + " " + why)
		}
		_ = http.NewResponseController(w).Flush()
		// The server closes the connection mid-body: the client reads
		// fewer bytes than Content-Length (unexpected EOF).
		panic(http.ErrAbortHandler)
	}
	for sent < length {
		n := min(int64(chunk), length-sent)
		for _, at := range []int64{cutAt, expireAt} {
			if at >= sent && sent+n > at {
				n = at - sent
			}
		}
		if n > 0 {
			if lim != nil {
				if err := lim.WaitN(r.Context(), int(n)); err != nil {
					return // the client went away
				}
			}
			if !s.tokenActive(tok) {
				s.dl.faulted.Add(1)
				cut("token expired")
			}
			if _, err := io.ReadFull(content, buf[:n]); err != nil {
				panic(fmt.Sprintf("cdsesim: reading %s: %v", valuePath(id, node), err)) // the content never ends early
			}
			if corruptAt >= start+sent && corruptAt < start+sent+n {
				buf[corruptAt-start-sent] ^= 0xff
			}
			wn, err := w.Write(buf[:n])
			account(wn)
			if err != nil {
				return
			}
		}
		if sent == expireAt {
			s.expireToken(tok)
			cut("")
		}
		if sent == cutAt {
			cut("")
		}
	}
	rec.Complete = true
	s.dl.complete.Add(1)
	s.dl.mu.Lock()
	s.dl.user(user).Complete++
	s.dl.mu.Unlock()
}
