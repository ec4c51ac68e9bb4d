// Package webhook is the PUSH endpoint the catalogue calls: an Echo server
// that authenticates the caller, reads and validates the notification body,
// hands the notifications to a publish.BatchPublisher, and answers 2xx only once every one
// of them is stored (or known to be stored already).
package webhook

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	preflight "github.com/cdse-jetstream/receiver/internal/ingest/webhook/wire"

	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// Options configure the webhook.
type Options struct {
	// Path the catalogue POSTs to ("/notifications").
	Path string
	// MaxBody bounds the request body, after decompression.
	MaxBody int64
	// BodyBudget bounds the bytes of request bodies held in memory at once,
	// reserved as they arrive (0: 32 MiB); it is raised to hold the
	// largest body twice (raw and decompressed). BodyWait is the longest a
	// body waits for room at each step (0: 2 s); a body that gets none is
	// answered 503 with Retry-After.
	BodyBudget int64
	BodyWait   time.Duration
	// MaxNotifications bounds the elements of an array body.
	MaxNotifications int
	// Route shapes the messages (subject prefix and template, CloudEvents).
	Route ingest.Route
	// Realm is sent in WWW-Authenticate.
	Realm string
	// TrustedProxies are the peers whose X-Forwarded-For names the client;
	// for anyone else the TCP peer is the client.
	TrustedProxies []*net.IPNet
	// Limiter, if set, answers 429 to wrong credentials from an address
	// over its limit of failures.
	Limiter FailureLimiter
	// RequestLog, if set, writes the line per request instead of the
	// logger given to New.
	RequestLog logging.RequestLog
	// Quarantine, if set, keeps every authenticated body that is refused.
	Quarantine quarantine.Putter
}

// Response is the body of a 200.
type Response struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// Context keys for the request log.
const (
	ctxError    = "webhook.error"
	ctxNotes    = "webhook.notifications"
	ctxResponse = "webhook.response"
)

type handler struct {
	o         Options
	pub       publish.BatchPublisher
	m         *metrics
	log       logrus.FieldLogger
	tooLarge  error // the refusal of a body over MaxBody, made once
	budget    *bodyBudget
	seenTypes sync.Map // content kinds already logged
}

// New builds the webhook's Echo server. Its metrics are registered on reg.
func New(o Options, pub publish.BatchPublisher, v Verifier, reg prometheus.Registerer, log logrus.FieldLogger) (*echo.Echo, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	if bc, ok := v.(interface{ BcryptChecks() uint64 }); ok {
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cdse_receiver_auth_bcrypt_checks_total",
			Help: "bcrypt checks of the htpasswd file's passwords (verified passwords are remembered for 10 minutes; an address over its failed-login limit costs at most one at a time, and none for a user not in the file).",
		}, func() float64 { return float64(bc.BcryptChecks()) })); err != nil {
			return nil, fmt.Errorf("register webhook metrics: %w", err)
		}
	}
	if o.Realm == "" {
		o.Realm = preflight.Realm // register's preflight recognises the receiver by it
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(log)
	// The peer address, not X-Forwarded-For, unless the peer is a trusted
	// proxy: anyone can write that header. Echo would trust loopback and
	// private ranges by default; only the configured ranges are trusted here.
	e.IPExtractor = echo.ExtractIPDirect()
	if len(o.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range o.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}
	var rl logging.RequestLog = logging.RequestEntries{Log: log}
	if o.RequestLog != nil {
		rl = o.RequestLog
	}
	e.Use(requestLog(rl, m),
		// Private JSON answers, in case someone points a browser at the
		// endpoint.
		middleware.SecureWithConfig(middleware.SecureConfig{
			ContentTypeNosniff:    "nosniff",
			XFrameOptions:         "DENY",
			ContentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'",
			ReferrerPolicy:        "no-referrer",
		}),
		noStore,
		// A panic becomes a 500 without a stack trace in the body; the stack
		// goes to the log; http.ErrAbortHandler is passed on.
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			DisableErrorHandler: true, // requestLog answers, with the true status in its line
			LogErrorFunc: func(_ echo.Context, err error, stack []byte) error {
				log.WithError(err).WithField("stack", string(stack)).Error("handler panicked")
				return errors.New("handler panicked")
			},
		}))
	if o.BodyBudget <= 0 {
		o.BodyBudget = defaultBodyBudget
	}
	// The largest body may be held twice: as received and decompressed.
	o.BodyBudget = max(o.BodyBudget, 2*(o.MaxBody+1))
	if o.BodyWait <= 0 {
		o.BodyWait = defaultBodyWait
	}
	h := &handler{o: o, pub: pub, m: m, log: log, budget: newBodyBudget(o.BodyBudget), tooLarge: &bodyTooLarge{limit: o.MaxBody}}
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cdse_receiver_http_body_bytes_in_use",
		Help: "Bytes of webhook request bodies held in memory now, reserved as they arrive (at most the body budget, " + strconv.FormatInt(o.BodyBudget, 10) + " bytes; beyond, requests wait, then get 503).",
	}, func() float64 { return float64(h.budget.inUse()) })); err != nil {
		return nil, fmt.Errorf("register webhook metrics: %w", err)
	}
	// The path with and without a trailing slash: an operator who registered
	// the other spelling must not lose every notification to a 404.
	paths := []string{o.Path}
	if alt := strings.TrimSuffix(o.Path, "/"); alt != o.Path && alt != "" {
		paths = append(paths, alt)
	} else if !strings.HasSuffix(o.Path, "/") {
		paths = append(paths, o.Path+"/")
	}
	for _, p := range paths {
		e.POST(p, h.receive, basicAuth(v, o.Limiter, o.Realm, m, log))
		// Echo answers OPTIONS itself (204); every method but POST gets 405.
		e.OPTIONS(p, func(echo.Context) error { return echo.ErrMethodNotAllowed })
	}
	// Other methods on the path get 405 (Echo's router), other paths 404.
	return e, nil
}

// Timeouts of the webhook's HTTP server: a public endpoint must cut off
// slow clients before they pile up.
type Timeouts struct {
	ReadHeader time.Duration // request line and headers (slowloris)
	Read       time.Duration // the whole request, body included
	Publish    time.Duration // the longest wait for PubAcks
}

// HTTPServer wraps h in the server the webhook runs in.
func HTTPServer(h http.Handler, t Timeouts, errorLog *stdlog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Read + t.Publish,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          errorLog,
	}
}

func (h *handler) receive(c echo.Context) error {
	req := c.Request()
	h.noteContentType(req.Header.Get(echo.HeaderContentType))
	// The body's buffers are reserved in the budget as they are allocated
	// and grown, and given back once the request is answered (the buffers
	// are in use until then: the store refers to them until its PubAck).
	lease := &bodyLease{budget: h.budget, ctx: req.Context(), wait: h.o.BodyWait}
	defer lease.done()
	bp := bodies.Get().(*[]byte)
	var raw, body []byte
	err := lease.grow(int64(cap(*bp)))
	if err == nil {
		if raw, err = h.readBody(req, (*bp)[:0], lease); err == nil {
			body, err = h.decode(req, raw, lease)
		}
	}
	recycle := true
	defer func() {
		if recycle && cap(body) <= maxPooled {
			if body != nil {
				*bp = body[:0]
			}
			bodies.Put(bp)
		}
	}()
	if err != nil {
		if reason, ok := encodingReason(err); ok {
			// Arrived whole, refused for its encoding: kept as it came.
			recycle = false
			return h.refuse(c, err, reason, raw, req.Header.Get(echo.HeaderContentEncoding))
		}
		h.m.notKept.WithLabelValues(notKeptReason(err)).Inc()
		return err
	}
	if len(body) == 0 && req.Header.Get(preflight.Header) == "1" {
		return h.preflight(c)
	}
	// Without interests nothing reads where the entity's members lie.
	ns, err := notification.ParseWith(body, notification.ParseOptions{Max: h.o.MaxNotifications, NoEntity: h.o.Route.Interests == nil})
	if err != nil {
		// The store may refer to the bytes until its PubAck; the refused
		// path is rare, so the buffer is simply not reused.
		recycle = false
		return h.refuse(c, err, quarantine.ReasonOf(err), body, "")
	}
	// The log line gets copies, not the notifications: their Raw points
	// into the pooled buffer, which is reused once the request is answered.
	c.Set(ctxNotes, summarize(ns))
	results, err := h.pub.Publish(req.Context(), ingest.Messages(ns, &h.o.Route, ingest.SourcePush))
	if err != nil {
		// The NATS client may still hold the messages (acks not received):
		// this buffer must not be reused.
		recycle = false
		for i := range ns {
			h.m.notifications.WithLabelValues(string(ns[i].Event), "failed").Inc()
		}
		return err
	}
	h.countStored(ns, results)
	o := ingest.Count(results)
	resp := Response{Accepted: o.Accepted, Duplicates: o.Duplicates}
	c.Set(ctxResponse, resp)
	return c.JSONBlob(http.StatusOK, resp.appendJSON(make([]byte, 0, 48)))
}

// countStored counts the stored notifications by event and outcome, from
// ingest.Count of each run of one event (a body is one notification, or an
// array usually of one event).
func (h *handler) countStored(ns []notification.Notification, results []publish.Result) {
	for i := 0; i < len(results); {
		j := i + 1
		for j < len(results) && ns[j].Event == ns[i].Event {
			j++
		}
		o := ingest.Count(results[i:j])
		ev := string(ns[i].Event)
		if o.Accepted > 0 {
			h.m.notifications.WithLabelValues(ev, "accepted").Add(float64(o.Accepted))
		}
		if o.Duplicates > 0 {
			h.m.notifications.WithLabelValues(ev, "duplicate").Add(float64(o.Duplicates))
		}
		i = j
	}
}

// encodingReason says whether a body that could not be read or decoded is
// kept in the quarantine, and its reason there: one that arrived whole, in
// an encoding we do not know or broken, is; one too large, incomplete or
// without room is not (there is nothing whole to keep).
func encodingReason(err error) (string, bool) {
	switch {
	case errors.Is(err, errUnknownEncoding):
		return quarantine.ReasonUnsupportedEncoding, true
	case errors.Is(err, errUndecodable):
		return quarantine.ReasonUndecodable, true
	}
	return "", false
}

// notKeptReason is the metric's word for a body that could not be kept.
func notKeptReason(err error) string {
	switch {
	case errors.Is(err, errNoRoomForBody):
		return "busy"
	case errors.Is(err, errBodyTooLarge):
		return "too_large"
	}
	return "incomplete"
}

// refuse counts a body refused for what it is and keeps it in the
// quarantine, if there is one. The answer is the refusal, saying the body
// was kept; when it could not be, notKept (503, retry): never a 4xx for
// something we did not keep. bodyEnc is the encoding of body ("" once
// decoded).
func (h *handler) refuse(c echo.Context, refusal error, reason string, body []byte, bodyEnc string) error {
	h.m.rejected.Inc()
	if h.o.Quarantine == nil {
		return refusal
	}
	// The entry notes what the sender is told.
	told := toError(refusal)
	req := c.Request()
	err := h.o.Quarantine.Put(req.Context(), quarantine.Entry{
		Source: ingest.SourcePush, Reason: reason, Error: told.Message, Field: told.Field,
		ContentType: req.Header.Get(echo.HeaderContentType), ContentEncoding: req.Header.Get(echo.HeaderContentEncoding),
		BodyEncoding: bodyEnc, Body: body,
	})
	if err != nil {
		return &notKept{refusal: refusal, cause: err}
	}
	return &kept{refusal: refusal}
}

// appendJSON is what encoding/json writes for r (a request's answer is
// the same two numbers every time; reflection cost 2 % of the receiver's CPU).
func (r Response) appendJSON(b []byte) []byte {
	b = append(b, `{"accepted":`...)
	b = strconv.AppendInt(b, int64(r.Accepted), 10)
	b = append(b, `,"duplicates":`...)
	b = strconv.AppendInt(b, int64(r.Duplicates), 10)
	return append(b, "}\n"...)
}

// contentKind says what kind of Content-Type ct is, for the metric of
// unexpected ones: "" for application/json (with no charset or UTF-8, in
// any case), else json, text, form, other or missing. The live catalogue's
// Content-Type for PUSH is not documented, so the label never decides
// anything: the body does.
func contentKind(ct string) string {
	if ct == echo.MIMEApplicationJSON {
		return ""
	}
	if strings.TrimSpace(ct) == "" {
		return "missing"
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return "other"
	case mt == echo.MIMEApplicationJSON:
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8") {
			return ""
		}
		return "json"
	case strings.HasSuffix(mt, "+json"):
		return "json"
	case strings.HasPrefix(mt, "text/"):
		return "text"
	case mt == echo.MIMEApplicationForm || mt == echo.MIMEMultipartForm:
		return "form"
	}
	return "other"
}

// noteContentType counts an unexpected Content-Type and logs the first of
// each kind (a sender that always uses one would otherwise fill the log).
func (h *handler) noteContentType(ct string) {
	kind := contentKind(ct)
	if kind == "" {
		return
	}
	h.m.contentTypes.WithLabelValues(kind).Inc()
	if _, seen := h.seenTypes.LoadOrStore(kind, true); !seen {
		h.log.WithFields(logrus.Fields{"kind": kind, "content_type": logSafe(ct)}).
			Warn("unexpected Content-Type on the webhook; the body decides whether it is accepted (logged once per kind)")
	}
}

// logSafe cuts a header value for a log line and blanks control characters.
func logSafe(s string) string {
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// noteSummary is what the request's log line says of its notifications:
// values that do not point into the request buffer.
type noteSummary struct {
	event, productID string
	count            int
}

// summarize keeps what the log needs: the event is a constant and the
// product id the decoder's canonical form (a new string, never a slice of
// the body); Raw is left behind.
func summarize(ns []notification.Notification) noteSummary {
	if len(ns) == 0 {
		return noteSummary{}
	}
	return noteSummary{event: string(ns[0].Event), productID: ns[0].ProductID, count: len(ns)}
}

// bodies recycles request buffers. A buffer goes back to the pool only when
// nothing can refer to it any more: after the PubAcks (or a duplicate
// answered from memory), or after a refusal before publishing. Notifications
// keep no reference to it past the request: the fields they hand on
// (product id, event) are copies or constants.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooled keeps exceptional (large) buffers out of the pool, so that
// what a burst of large bodies took is given back once it is over (the
// catalogue's notifications are about 7 KB).
const maxPooled = 64 << 10

// readBody reads the body into buf within MaxBody. The buffer grows as
// bytes arrive, each step reserved on lease first: Content-Length is a
// promise, not bytes, and a buffer of its size allocated up front let slow
// senders hold memory they never filled.
func (h *handler) readBody(req *http.Request, buf []byte, lease *bodyLease) ([]byte, error) {
	limit := h.o.MaxBody
	if req.ContentLength > limit {
		return nil, h.tooLarge
	}
	// The most the body can be, plus one byte to see its end.
	most := limit + 1
	if req.ContentLength >= 0 {
		most = req.ContentLength + 1
	}
	raw, err := readAll(io.LimitReader(http.MaxBytesReader(nil, req.Body, limit+1), limit+1), buf, most, lease)
	if err != nil {
		return nil, h.bodyReadError(err)
	}
	if int64(len(raw)) > limit {
		return nil, h.tooLarge
	}
	return raw, nil
}

// decode undoes the body's Content-Encoding, gzip with the same limit on
// the decompressed size as on the body, so a small bomb cannot expand in
// memory; its buffer too grows on lease. An encoding we do not know
// (errUnknownEncoding) or broken gzip (errUndecodable) is refused; the
// caller keeps raw as it came.
func (h *handler) decode(req *http.Request, raw []byte, lease *bodyLease) ([]byte, error) {
	limit := h.o.MaxBody
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get(echo.HeaderContentEncoding))); enc {
	case "", "identity":
		return raw, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUndecodable, err)
		}
		defer zr.Close()
		start := min(int64(len(raw))*4+512, limit+1)
		if err := lease.grow(start); err != nil {
			return nil, err
		}
		body, err := readAll(io.LimitReader(zr, limit+1), make([]byte, 0, start), limit+1, lease)
		if errors.Is(err, errNoRoomForBody) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUndecodable, err)
		}
		if int64(len(body)) > limit {
			return nil, h.tooLarge
		}
		return body, nil
	default:
		return nil, fmt.Errorf("%w %q", errUnknownEncoding, logSafe(enc))
	}
}

// bodyReadError says why a body did not arrive: too large, not in time, or
// broken off (the budget's errNoRoomForBody as it is).
func (h *handler) bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, errNoRoomForBody):
		return err
	case errors.As(err, &mbe):
		return h.tooLarge
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %w", errBodyTimeout, err)
	}
	return fmt.Errorf("%w: %w", errBodyUnreadable, err)
}

// readAll is io.ReadAll into b, which grows only when full (that is, as
// bytes arrive), doubling but never beyond most, the most r can give plus
// one byte (to see its end); each growth is reserved on lease first.
func readAll(r io.Reader, b []byte, most int64, lease *bodyLease) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if int64(cap(b)) >= most {
				// b holds most bytes, more than r ever gives but for the
				// LimitReader of limit+1 bytes, which is at its end.
				return b, nil
			}
			n := min(max(2*int64(cap(b)), 4<<10), most)
			if err := lease.grow(n - int64(cap(b))); err != nil {
				return b, err
			}
			grown := make([]byte, len(b), n)
			copy(grown, b)
			b = grown
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				return b, nil
			}
			return b, err
		}
	}
}

// noStore tells caches to keep nothing (Echo's Secure middleware does not
// set Cache-Control).
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		return next(c)
	}
}

// requestLog writes one line per request and counts it by status. It runs
// outermost, so it sees the status the error handler chose.
func requestLog(log logging.RequestLog, m *metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			elapsed := time.Since(start)
			m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
			m.duration.Observe(elapsed.Seconds())

			line := logging.RequestLine{
				Method:    c.Request().Method,
				Status:    status,
				LatencyMS: float64(elapsed.Microseconds()) / 1000,
				Remote:    c.RealIP(),
				Outcome:   "ok",
			}
			if s, ok := c.Get(ctxNotes).(noteSummary); ok {
				line.Event, line.ProductID, line.Notifications = s.event, s.productID, s.count
			}
			if r, ok := c.Get(ctxResponse).(Response); ok {
				line.HasResult, line.Accepted, line.Duplicates = true, r.Accepted, r.Duplicates
				if r.Accepted == 0 {
					line.Outcome = "duplicate"
				}
			}
			if e, ok := c.Get(ctxError).(*errorBody); ok {
				line.Outcome, line.Reason = e.Code, e.Message
			}
			log.LogRequest(line)
			return nil
		}
	}
}

// preflight answers register's preflight request (internal/register/preflight): a
// POST with the credentials being registered (the middleware has checked
// them), preflight.Header and no body, answered as this receiver without
// storing anything. With a body the header is ignored: a notification is
// a notification.
func (h *handler) preflight(c echo.Context) error {
	h.log.WithField("remote", c.RealIP()).Info("preflight request answered: the endpoint and the credentials work")
	return c.JSON(http.StatusOK, preflight.Answer{Preflight: "ok", Service: preflight.Service, Version: buildinfo.Get().Version})
}
