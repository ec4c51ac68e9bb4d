package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// The fakes of TestEveryAnswer: each stands for one dependency's every
// outcome, so that every answer can be reached in-process and at once.

// fakePublisher answers with results (each notification a duplicate when
// dup says so) or err.
type fakePublisher struct {
	dup []bool
	err error
}

func (p fakePublisher) Publish(_ context.Context, msgs []publish.Message) ([]publish.Result, error) {
	if p.err != nil {
		return nil, p.err
	}
	res := make([]publish.Result, len(msgs))
	for i := range res {
		res[i].Duplicate = i < len(p.dup) && p.dup[i]
	}
	return res, nil
}

// fakeQuarantine records what it is given, or fails with err.
type fakeQuarantine struct {
	err     error
	entries []quarantine.Entry
}

func (q *fakeQuarantine) Put(_ context.Context, e quarantine.Entry) error {
	if q.err != nil {
		return q.err
	}
	q.entries = append(q.entries, e)
	return nil
}

// fakeVerifier knows the password "right"; "hashed" is a user with a
// bcrypt hash, whose check fails with err when err is set.
type fakeVerifier struct{ err error }

func (fakeVerifier) Known(_, pass string) bool { return pass == "right" }
func (v fakeVerifier) Verify(context.Context, string, string) (bool, error) {
	return false, v.err
}
func (fakeVerifier) Checkable(user string) bool { return user == "hashed" }

// fakeLimiter says an address is over its limit (before a costly check:
// limited; after a failure: failed).
type fakeLimiter struct{ limited, failed bool }

func (l fakeLimiter) Limited(string) (bool, time.Duration) { return l.limited, 2500 * time.Millisecond }
func (l fakeLimiter) Fail(string) (bool, time.Duration)    { return l.failed, 2500 * time.Millisecond }
func (fakeLimiter) Admit(context.Context, string) (func(), error) {
	return func() {}, nil
}

// lineTaker keeps the request log's lines.
type lineTaker struct {
	mu    sync.Mutex
	lines []logging.RequestLine
}

func (l *lineTaker) LogRequest(r logging.RequestLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r)
}

// timeoutBody fails as a connection whose read deadline passed.
type timeoutBody struct{}

func (timeoutBody) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// brokenBody fails as a connection reset.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// answer is everything a request's outcome shows outside the handler.
type answer struct {
	Status int
	Body   string
	// Headers: Retry-After, Allow, Connection, WWW-Authenticate and
	// Content-Type, when set.
	Headers map[string]string
	// Line is the request log line's outcome and reason.
	Line string
	// Kept is the quarantine entry (reason|error|field|body
	// encoding|content encoding|body), "" when nothing was kept.
	Kept string
	// Metrics are the non-zero counters of the webhook.
	Metrics map[string]float64
	// ErrorLog is the error-level line of the error handler, if any.
	ErrorLog string
}

// TestEveryAnswer pins every answer the webhook gives byte for byte: the
// status, the body, the headers a client acts on, the log line, what the
// quarantine is given and the metrics. A change here is a change of the
// webhook's contract, not a refactoring.
func TestEveryAnswer(t *testing.T) {
	s2 := fixtures.Notification(t, "created-s2.json")
	d1 := fixtures.Notification(t, "deleted-s3-novalue.json")
	mixed := append(append(append(append([]byte("["), bytes.TrimSpace(s2)...), ','), bytes.TrimSpace(d1)...), ']')
	s2gz := gz(s2)
	tooMany := []byte("[" + strings.TrimSuffix(strings.Repeat(`{"SubscriptionEvent":"created","ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"},`, 4), ",") + "]")
	arrayBad := []byte(`[` + string(bytes.TrimSpace(d1)) + `,{"SubscriptionEvent":"deleted"}]`)
	version := buildinfo.Get().Version
	const json = "application/json"
	ok := map[string]string{"Content-Type": json}

	type setup struct {
		pub      fakePublisher
		qErr     error
		noQ      bool
		verifier fakeVerifier
		limiter  *fakeLimiter
	}
	tests := []struct {
		name    string
		setup   setup
		method  string
		path    string
		body    io.Reader
		length  int64 // Content-Length; -1 unknown; 0: the body's
		auth    string
		headers map[string]string
		want    answer
	}{
		{name: "created", body: bytes.NewReader(s2), want: answer{Status: 200, Body: "{\"accepted\":1,\"duplicates\":0}\n", Headers: ok, Line: "ok|",
			Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=200}": 1, "cdse_receiver_notifications_total{event=created,outcome=accepted}": 1}}},
		{name: "duplicate", setup: setup{pub: fakePublisher{dup: []bool{true}}}, body: bytes.NewReader(s2), want: answer{Status: 200, Body: "{\"accepted\":0,\"duplicates\":1}\n", Headers: ok, Line: "duplicate|",
			Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=200}": 1, "cdse_receiver_notifications_total{event=created,outcome=duplicate}": 1}}},
		{name: "two events, one duplicate", setup: setup{pub: fakePublisher{dup: []bool{false, true}}}, body: bytes.NewReader(mixed), want: answer{Status: 200, Body: "{\"accepted\":1,\"duplicates\":1}\n", Headers: ok, Line: "ok|",
			Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=200}": 1, "cdse_receiver_notifications_total{event=created,outcome=accepted}": 1, "cdse_receiver_notifications_total{event=deleted,outcome=duplicate}": 1}}},
		{name: "gzip", body: bytes.NewReader(s2gz), headers: map[string]string{"Content-Encoding": "gzip"}, want: answer{Status: 200, Body: "{\"accepted\":1,\"duplicates\":0}\n", Headers: ok, Line: "ok|",
			Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=200}": 1, "cdse_receiver_notifications_total{event=created,outcome=accepted}": 1}}},
		{name: "preflight", headers: map[string]string{"Cdse-Preflight": "1"}, want: answer{Status: 200, Body: `{"preflight":"ok","service":"cdse-jetstream-receiver","version":"` + version + "\"}\n", Headers: ok, Line: "ok|",
			Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=200}": 1}}},

		{name: "no credentials", auth: "none", body: bytes.NewReader(s2),
			want: answer{Status: 401, Body: "{\"error\":\"unauthorized\",\"message\":\"valid Basic credentials required\"}\n", Headers: map[string]string{"Content-Type": "application/json", "WWW-Authenticate": "Basic realm=\"cdse-receiver\", charset=\"UTF-8\""}, Line: "unauthorized|valid Basic credentials required", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=missing}": 1, "cdse_receiver_http_requests_total{code=401}": 1}}},
		{name: "malformed credentials", auth: "Basic !!!", body: bytes.NewReader(s2),
			want: answer{Status: 401, Body: "{\"error\":\"unauthorized\",\"message\":\"valid Basic credentials required\"}\n", Headers: map[string]string{"Content-Type": "application/json", "WWW-Authenticate": "Basic realm=\"cdse-receiver\", charset=\"UTF-8\""}, Line: "unauthorized|valid Basic credentials required", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=malformed}": 1, "cdse_receiver_http_requests_total{code=401}": 1}}},
		{name: "wrong password", auth: "Basic Y2RzZTp3cm9uZw==", body: bytes.NewReader(s2),
			want: answer{Status: 401, Body: "{\"error\":\"unauthorized\",\"message\":\"valid Basic credentials required\"}\n", Headers: map[string]string{"Content-Type": "application/json", "WWW-Authenticate": "Basic realm=\"cdse-receiver\", charset=\"UTF-8\""}, Line: "unauthorized|valid Basic credentials required", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=invalid}": 1, "cdse_receiver_http_requests_total{code=401}": 1}}},
		{name: "over the failure limit, no hash", setup: setup{limiter: &fakeLimiter{limited: true}}, auth: "Basic Y2RzZTp3cm9uZw==", body: bytes.NewReader(s2),
			want: answer{Status: 429, Body: "{\"error\":\"too_many_auth_failures\",\"message\":\"too many failed logins from this address; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "3"}, Line: "too_many_auth_failures|too many failed logins from this address; retry later", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=limited}": 1, "cdse_receiver_http_requests_total{code=429}": 1}}},
		{name: "failure over the limit", setup: setup{limiter: &fakeLimiter{failed: true}}, auth: "Basic Y2RzZTp3cm9uZw==", body: bytes.NewReader(s2),
			want: answer{Status: 429, Body: "{\"error\":\"too_many_auth_failures\",\"message\":\"too many failed logins from this address; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "3"}, Line: "too_many_auth_failures|too many failed logins from this address; retry later", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=invalid}": 1, "cdse_receiver_auth_failures_total{reason=limited}": 1, "cdse_receiver_http_requests_total{code=429}": 1}}},
		{name: "not checked in time", setup: setup{verifier: fakeVerifier{err: errors.New("bcrypt queue full")}}, auth: "Basic aGFzaGVkOndyb25n", body: bytes.NewReader(s2),
			want: answer{Status: 503, Body: "{\"error\":\"unavailable\",\"message\":\"the credentials could not be checked now; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "5"}, Line: "unavailable|the credentials could not be checked now; retry later", Metrics: map[string]float64{"cdse_receiver_auth_failures_total{reason=unchecked}": 1, "cdse_receiver_http_requests_total{code=503}": 1}, ErrorLog: "request failed: the credentials could not be checked: bcrypt queue full (status 503)"}},

		{name: "GET", method: http.MethodGet,
			want: answer{Status: 405, Body: "{\"error\":\"method_not_allowed\",\"message\":\"only POST is allowed here\"}\n", Headers: map[string]string{"Allow": "POST", "Content-Type": "application/json"}, Line: "method_not_allowed|only POST is allowed here", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=405}": 1}}},
		{name: "HEAD", method: http.MethodHead,
			want: answer{Status: 405, Body: "", Headers: map[string]string{"Allow": "POST"}, Line: "method_not_allowed|only POST is allowed here", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=405}": 1}}},
		{name: "OPTIONS", method: http.MethodOptions,
			want: answer{Status: 405, Body: "{\"error\":\"method_not_allowed\",\"message\":\"only POST is allowed here\"}\n", Headers: map[string]string{"Allow": "POST", "Content-Type": "application/json"}, Line: "method_not_allowed|only POST is allowed here", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=405}": 1}}},
		{name: "other path", path: "/other", body: bytes.NewReader(s2),
			want: answer{Status: 404, Body: "{\"error\":\"not_found\",\"message\":\"no such path\"}\n", Headers: ok, Line: "not_found|no such path", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=404}": 1}}},

		{name: "too large, said", body: bytes.NewReader(make([]byte, 64<<10+1)),
			want: answer{Status: 413, Body: "{\"error\":\"body_too_large\",\"message\":\"request body larger than 65536 bytes\"}\n", Headers: ok, Line: "body_too_large|request body larger than 65536 bytes", Metrics: map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=too_large}": 1, "cdse_receiver_http_requests_total{code=413}": 1}}},
		{name: "too large, unsaid", body: bytes.NewReader(make([]byte, 64<<10+1)), length: -1,
			want: answer{Status: 413, Body: "{\"error\":\"body_too_large\",\"message\":\"request body larger than 65536 bytes\"}\n", Headers: ok, Line: "body_too_large|request body larger than 65536 bytes", Metrics: map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=too_large}": 1, "cdse_receiver_http_requests_total{code=413}": 1}}},
		{name: "gzip bomb", body: bytes.NewReader(gz(make([]byte, 1<<20))), headers: map[string]string{"Content-Encoding": "gzip"},
			want: answer{Status: 413, Body: "{\"error\":\"body_too_large\",\"message\":\"request body larger than 65536 bytes\"}\n", Headers: ok, Line: "body_too_large|request body larger than 65536 bytes", Metrics: map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=too_large}": 1, "cdse_receiver_http_requests_total{code=413}": 1}}},
		{name: "read timeout", body: timeoutBody{}, length: -1,
			want: answer{Status: 408, Body: "{\"error\":\"request_timeout\",\"message\":\"the request body did not arrive in time\"}\n", Headers: ok, Line: "request_timeout|the request body did not arrive in time", Metrics: map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=incomplete}": 1, "cdse_receiver_http_requests_total{code=408}": 1}}},
		{name: "read failure", body: brokenBody{}, length: -1,
			want: answer{Status: 400, Body: "{\"error\":\"bad_body\",\"message\":\"could not read the request body\"}\n", Headers: ok, Line: "bad_body|could not read the request body", Metrics: map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=incomplete}": 1, "cdse_receiver_http_requests_total{code=400}": 1}}},

		{name: "unknown encoding", body: bytes.NewReader(s2), headers: map[string]string{"Content-Encoding": "br"},
			want: answer{Status: 415, Body: "{\"error\":\"unsupported_content_encoding\",\"message\":\"Content-Encoding must be gzip or none\",\"quarantined\":true}\n", Headers: ok, Line: "unsupported_content_encoding|Content-Encoding must be gzip or none", Kept: "unsupported_encoding|Content-Encoding must be gzip or none||br|br|10978 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=415}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "not gzip", body: strings.NewReader("not gzip"), headers: map[string]string{"Content-Encoding": "x-gzip"},
			want: answer{Status: 400, Body: "{\"error\":\"bad_body\",\"message\":\"body is not valid gzip\",\"quarantined\":true}\n", Headers: ok, Line: "bad_body|body is not valid gzip", Kept: "undecodable_body|body is not valid gzip||x-gzip|x-gzip|8 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "truncated gzip", body: bytes.NewReader(s2gz[:len(s2gz)/2]), headers: map[string]string{"Content-Encoding": "gzip"},
			want: answer{Status: 400, Body: "{\"error\":\"bad_body\",\"message\":\"body is not valid gzip\",\"quarantined\":true}\n", Headers: ok, Line: "bad_body|body is not valid gzip", Kept: "undecodable_body|body is not valid gzip||gzip|gzip|937 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "empty", body: http.NoBody,
			want: answer{Status: 400, Body: "{\"error\":\"invalid_notification\",\"message\":\"empty body\",\"quarantined\":true}\n", Headers: ok, Line: "invalid_notification|empty body", Kept: "invalid_json|empty body||||0 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "malformed JSON", body: strings.NewReader("{"),
			want: answer{Status: 400, Body: "{\"error\":\"invalid_notification\",\"message\":\"malformed JSON at offset 1\",\"quarantined\":true}\n", Headers: ok, Line: "invalid_notification|malformed JSON at offset 1", Kept: "invalid_json|malformed JSON at offset 1||||1 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "wrong case", body: bytes.NewReader(bytes.Replace(s2, []byte(`"created"`), []byte(`"Created"`), 1)),
			want: answer{Status: 400, Body: "{\"error\":\"invalid_notification\",\"message\":\"SubscriptionEvent: unknown event \\\"Created\\\": must be one of created, modified, deleted (lowercase)\",\"field\":\"SubscriptionEvent\",\"quarantined\":true}\n", Headers: ok, Line: "invalid_notification|SubscriptionEvent: unknown event \"Created\": must be one of created, modified, deleted (lowercase)", Kept: "invalid_notification|SubscriptionEvent: unknown event \"Created\": must be one of created, modified, deleted (lowercase)|SubscriptionEvent|||10978 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "array all or nothing", body: bytes.NewReader(arrayBad),
			want: answer{Status: 400, Body: "{\"error\":\"invalid_notification\",\"message\":\"[1].ProductId: missing\",\"field\":\"ProductId\",\"index\":1,\"quarantined\":true}\n", Headers: ok, Line: "invalid_notification|[1].ProductId: missing", Kept: "invalid_notification|[1].ProductId: missing|ProductId|||412 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "too many", body: bytes.NewReader(tooMany),
			want: answer{Status: 413, Body: "{\"error\":\"too_many_notifications\",\"message\":\"too many notifications in one request: more than 3\",\"quarantined\":true}\n", Headers: ok, Line: "too_many_notifications|too many notifications in one request: more than 3", Kept: "too_many_notifications|too many notifications in one request: more than 3||||333 bytes", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=413}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},
		{name: "refused, not kept", setup: setup{qErr: errors.New("quarantine stream gone")}, body: strings.NewReader("{"),
			want: answer{Status: 503, Body: "{\"error\":\"unavailable\",\"message\":\"the body was refused (malformed JSON at offset 1) and could not be kept for inspection now; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "5"}, Line: "unavailable|the body was refused (malformed JSON at offset 1) and could not be kept for inspection now; retry later", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=503}": 1, "cdse_receiver_notifications_rejected_total{}": 1}, ErrorLog: "request failed: the body was refused (malformed JSON at offset 1) and could not be kept: quarantine stream gone (status 503)"}},
		{name: "unknown encoding, not kept", setup: setup{qErr: errors.New("quarantine stream gone")}, body: bytes.NewReader(s2), headers: map[string]string{"Content-Encoding": "br"},
			want: answer{Status: 503, Body: "{\"error\":\"unavailable\",\"message\":\"the body was refused (Content-Encoding must be gzip or none) and could not be kept for inspection now; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "5"}, Line: "unavailable|the body was refused (Content-Encoding must be gzip or none) and could not be kept for inspection now; retry later", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=503}": 1, "cdse_receiver_notifications_rejected_total{}": 1}, ErrorLog: "request failed: the body was refused (unsupported Content-Encoding \"br\") and could not be kept: quarantine stream gone (status 503)"}},
		{name: "refused, no quarantine", setup: setup{noQ: true}, body: strings.NewReader("{"),
			want: answer{Status: 400, Body: "{\"error\":\"invalid_notification\",\"message\":\"malformed JSON at offset 1\"}\n", Headers: ok, Line: "invalid_notification|malformed JSON at offset 1", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=400}": 1, "cdse_receiver_notifications_rejected_total{}": 1}}},

		{name: "store unavailable", setup: setup{pub: fakePublisher{err: fmt.Errorf("publish: %w: no responders", publish.ErrUnavailable)}}, body: bytes.NewReader(mixed),
			want: answer{Status: 503, Body: "{\"error\":\"unavailable\",\"message\":\"the notification could not be stored now; retry later\"}\n", Headers: map[string]string{"Content-Type": "application/json", "Retry-After": "5"}, Line: "unavailable|the notification could not be stored now; retry later", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=503}": 1, "cdse_receiver_notifications_total{event=created,outcome=failed}": 1, "cdse_receiver_notifications_total{event=deleted,outcome=failed}": 1}, ErrorLog: "request failed: publish: jetstream unavailable: no responders (status 503)"}},
		{name: "message too large", setup: setup{pub: fakePublisher{err: fmt.Errorf("publish: %w: maximum payload exceeded", publish.ErrTooLarge)}}, body: bytes.NewReader(s2),
			want: answer{Status: 413, Body: "{\"error\":\"message_too_large\",\"message\":\"a notification is larger than the NATS server accepts\"}\n", Headers: ok, Line: "message_too_large|a notification is larger than the NATS server accepts", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=413}": 1, "cdse_receiver_notifications_total{event=created,outcome=failed}": 1}}},
		{name: "store failed otherwise", setup: setup{pub: fakePublisher{err: errors.New("something else")}}, body: bytes.NewReader(s2),
			want: answer{Status: 500, Body: "{\"error\":\"internal\",\"message\":\"internal error\"}\n", Headers: ok, Line: "internal|internal error", Metrics: map[string]float64{"cdse_receiver_http_requests_total{code=500}": 1, "cdse_receiver_notifications_total{event=created,outcome=failed}": 1}, ErrorLog: "request failed: something else (status 500)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, hook := logtest.NewNullLogger()
			reg := prometheus.NewRegistry()
			q := &fakeQuarantine{err: tt.setup.qErr}
			lines := &lineTaker{}
			o := Options{Path: "/notifications", MaxBody: 64 << 10, MaxNotifications: 3, Route: ingest.Route{Prefix: "cdse.product"}, RequestLog: lines, Quarantine: q}
			if tt.setup.noQ {
				o.Quarantine = nil
			}
			if tt.setup.limiter != nil {
				o.Limiter = *tt.setup.limiter
			}
			e, err := New(o, tt.setup.pub, tt.setup.verifier, reg, logger)
			if err != nil {
				t.Fatal(err)
			}
			method, path := cmpOr(tt.method, http.MethodPost), cmpOr(tt.path, "/notifications")
			body := tt.body
			if body == nil {
				body = http.NoBody
			}
			r := httptest.NewRequest(method, path, body)
			switch {
			case tt.length != 0:
				r.ContentLength = tt.length
			}
			r.Header.Set("Content-Type", "application/json")
			if tt.auth == "" {
				r.SetBasicAuth(user, "right")
			} else if tt.auth != "none" {
				r.Header.Set("Authorization", tt.auth)
			}
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			e.ServeHTTP(w, r)
			got := answerOf(t, w, lines, q, reg, hook)
			if os.Getenv("ANSWERS_PRINT") != "" {
				fmt.Printf("ANSWER\t%s\t%#v\n", tt.name, got)
			}
			if !equalAnswers(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// TestBusyAnswer pins the answer to a body that finds no room in the body
// budget: 503, Retry-After, and the connection closed rather than drained.
func TestBusyAnswer(t *testing.T) {
	const maxBody = 64 << 10
	logger, hook := logtest.NewNullLogger()
	reg := prometheus.NewRegistry()
	lines := &lineTaker{}
	q := &fakeQuarantine{}
	e, err := New(Options{Path: "/notifications", MaxBody: maxBody, BodyBudget: 1, BodyWait: 50 * time.Millisecond, MaxNotifications: 3,
		Route: ingest.Route{Prefix: "cdse.product"}, Quarantine: q, RequestLog: lines}, fakePublisher{}, fakeVerifier{}, reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	// Two bodies that arrive to their limit and no further fill the
	// budget (raised to the largest body twice).
	var done sync.WaitGroup
	var writers []*io.PipeWriter
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		r := httptest.NewRequest(http.MethodPost, "/notifications", pr)
		r.ContentLength = -1
		r.Header.Set("Content-Type", "application/json")
		r.SetBasicAuth(user, "right")
		done.Go(func() { e.ServeHTTP(httptest.NewRecorder(), r) })
		if _, err := pw.Write(make([]byte, maxBody)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, func() bool { return metricValue(t, reg, "cdse_receiver_http_body_bytes_in_use") == 2*(maxBody+1) })
	// The answer to a third is measured before the two go away.
	r := httptest.NewRequest(http.MethodPost, "/notifications", bytes.NewReader(fixtures.Notification(t, "created-s2.json")))
	r.Header.Set("Content-Type", "application/json")
	r.SetBasicAuth(user, "right")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	got := answerOf(t, w, lines, q, reg, hook)
	for _, pw := range writers {
		pw.CloseWithError(errors.New("gone"))
	}
	done.Wait()
	want := answer{Status: 503, Body: "{\"error\":\"unavailable\",\"message\":\"too many request bodies are being received now; retry later\"}\n",
		Headers:  map[string]string{"Connection": "close", "Content-Type": "application/json", "Retry-After": "5"},
		Line:     "unavailable|too many request bodies are being received now; retry later",
		Metrics:  map[string]float64{"cdse_receiver_bodies_not_kept_total{reason=busy}": 1, "cdse_receiver_http_requests_total{code=503}": 1},
		ErrorLog: "request failed: too many request bodies are being received now: no room for N bytes within 50ms (status 503)"}
	// N is the capacity of the pooled buffer the request got, which other
	// tests may have grown.
	got.ErrorLog = regexp.MustCompile(`for \d+ bytes`).ReplaceAllString(got.ErrorLog, "for N bytes")
	if !equalAnswers(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// answerOf collects what a request showed.
func answerOf(t *testing.T, w *httptest.ResponseRecorder, lines *lineTaker, q *fakeQuarantine, reg *prometheus.Registry, hook *logtest.Hook) answer {
	t.Helper()
	a := answer{Status: w.Code, Body: w.Body.String(), Headers: map[string]string{}, Metrics: map[string]float64{}}
	for _, k := range []string{"Retry-After", "Allow", "Connection", "WWW-Authenticate", "Content-Type"} {
		if v := w.Header().Get(k); v != "" {
			a.Headers[k] = v
		}
	}
	lines.mu.Lock()
	if len(lines.lines) != 1 {
		t.Errorf("%d log lines, want 1", len(lines.lines))
	} else {
		l := lines.lines[0]
		if l.Status != w.Code {
			t.Errorf("log line says %d, the answer was %d", l.Status, w.Code)
		}
		a.Line = l.Outcome + "|" + l.Reason
	}
	lines.mu.Unlock()
	for _, en := range q.entries {
		a.Kept += fmt.Sprintf("%s|%s|%s|%s|%s|%d bytes", en.Reason, en.Error, en.Field, en.BodyEncoding, en.ContentEncoding, len(en.Body))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetType().String() != "COUNTER" || mf.GetName() == "cdse_receiver_auth_bcrypt_checks_total" {
			continue
		}
		for _, m := range mf.Metric {
			if v := m.GetCounter().GetValue(); v != 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				a.Metrics[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
			}
		}
	}
	for _, en := range hook.AllEntries() {
		if en.Level <= logrus.ErrorLevel {
			a.ErrorLog += fmt.Sprintf("%s: %v (status %v)", en.Message, en.Data[logrus.ErrorKey], en.Data["status"])
		}
	}
	return a
}

func equalAnswers(a, b answer) bool {
	return a.Status == b.Status && a.Body == b.Body && maps.Equal(a.Headers, b.Headers) && a.Line == b.Line &&
		a.Kept == b.Kept && maps.Equal(a.Metrics, b.Metrics) && a.ErrorLog == b.ErrorLog
}
