package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// The webhook's errors. Handlers and middleware return them, wrapped with
// %w around the cause that goes to the log; toError alone turns an error
// into an answer, from the table rules.
var (
	// errUnauthorized: no credentials, malformed ones, or wrong ones.
	errUnauthorized = errors.New("no valid Basic credentials")
	// errTooManyAuthFailures: wrong credentials from an address over its
	// limit of failures (returned in a retryIn).
	errTooManyAuthFailures = errors.New("too many failed logins from this address")
	// errAuthUnchecked: the costly check could not run in time; the
	// password is neither accepted nor refused.
	errAuthUnchecked = errors.New("the credentials could not be checked")
	// errBodyTooLarge: over MaxBody, as received or decompressed (returned
	// in a bodyTooLarge, which says the limit).
	errBodyTooLarge = errors.New("request body too large")
	// errBodyTimeout: the body did not arrive within the read timeout.
	errBodyTimeout = errors.New("the request body did not arrive in time")
	// errBodyUnreadable: the body did not arrive whole otherwise.
	errBodyUnreadable = errors.New("could not read the request body")
	// errNoRoomForBody: the body got no room in the body budget in time.
	errNoRoomForBody = errors.New("too many request bodies are being received now")
	// errUnknownEncoding: a Content-Encoding other than gzip or none.
	errUnknownEncoding = errors.New("unsupported Content-Encoding")
	// errUndecodable: a body that says gzip and is not.
	errUndecodable = errors.New("body is not valid gzip")

	// The rows of errors of other types (see kind): a refusal whose body
	// could not be kept (notKept), a notification.ValidationError.
	errRefusedNotKept      = errors.New("a refused body could not be kept")
	errInvalidNotification = errors.New("invalid notification")
)

// bodyTooLarge is errBodyTooLarge with the limit, which the sender is told.
type bodyTooLarge struct{ limit int64 }

func (e *bodyTooLarge) Error() string {
	return "request body larger than " + strconv.FormatInt(e.limit, 10) + " bytes"
}

func (e *bodyTooLarge) Unwrap() error { return errBodyTooLarge }

// retryIn is an error after which the sender may retry in after.
type retryIn struct {
	err   error
	after time.Duration
}

func (e *retryIn) Error() string { return e.err.Error() }
func (e *retryIn) Unwrap() error { return e.err }

// kept is a refusal whose body is in the quarantine: the answer is the
// refusal's, and says so.
type kept struct{ refusal error }

func (e *kept) Error() string { return e.refusal.Error() }
func (e *kept) Unwrap() error { return e.refusal }

// notKept is a refusal whose body could not be put in the quarantine: the
// sender is asked to retry (never a 4xx for a body we did not keep). It
// unwraps to the quarantine's error only: the refusal is not the answer.
type notKept struct {
	refusal, cause error
}

func (e *notKept) Error() string {
	return "the body was refused (" + e.refusal.Error() + ") and could not be kept: " + e.cause.Error()
}

func (e *notKept) Unwrap() error { return e.cause }

// retryAfterSeconds is what a 503 asks the sender to wait.
const retryAfterSeconds = 5

// rule is a row of the table: what the sender is told for an error.
type rule struct {
	is     error // the error this row answers (errors.Is)
	status int
	code   string
	// message is what the sender reads; "" for the error's own words
	// (notification's and bodyTooLarge's, written for the sender).
	message string
	// retry sends Retry-After: the retryIn's time, else retryAfterSeconds.
	retry bool
	// hangUp closes the connection after the answer: net/http would
	// otherwise read what is left of a small body (up to 256 KiB) before
	// answering, at the sender's pace, to keep the connection.
	hangUp bool
}

// rules is the one table of the webhook's refusals, in the order they
// are looked for. A notification.ValidationError is answered by the row of
// errInvalidNotification, a refusal that could not be kept by
// errRefusedNotKept's.
var rules = []rule{
	{is: errRefusedNotKept, status: http.StatusServiceUnavailable, code: "unavailable", retry: true},
	{is: errUnauthorized, status: http.StatusUnauthorized, code: "unauthorized", message: "valid Basic credentials required"},
	{is: errTooManyAuthFailures, status: http.StatusTooManyRequests, code: "too_many_auth_failures", message: "too many failed logins from this address; retry later", retry: true},
	{is: errAuthUnchecked, status: http.StatusServiceUnavailable, code: "unavailable", message: "the credentials could not be checked now; retry later", retry: true},
	{is: errNoRoomForBody, status: http.StatusServiceUnavailable, code: "unavailable", message: "too many request bodies are being received now; retry later", retry: true, hangUp: true},
	{is: errBodyTooLarge, status: http.StatusRequestEntityTooLarge, code: "body_too_large"},
	{is: errBodyTimeout, status: http.StatusRequestTimeout, code: "request_timeout", message: "the request body did not arrive in time"},
	{is: errBodyUnreadable, status: http.StatusBadRequest, code: "bad_body", message: "could not read the request body"},
	{is: errUnknownEncoding, status: http.StatusUnsupportedMediaType, code: "unsupported_content_encoding", message: "Content-Encoding must be gzip or none"},
	{is: errUndecodable, status: http.StatusBadRequest, code: "bad_body", message: "body is not valid gzip"},
	{is: errInvalidNotification, status: http.StatusBadRequest, code: "invalid_notification"},
	{is: notification.ErrTooMany, status: http.StatusRequestEntityTooLarge, code: "too_many_notifications"},
	{is: publish.ErrTooLarge, status: http.StatusRequestEntityTooLarge, code: "message_too_large", message: "a notification is larger than the NATS server accepts"},
	{is: publish.ErrUnavailable, status: http.StatusServiceUnavailable, code: "unavailable", message: "the notification could not be stored now; retry later", retry: true},
}

// echoRules are the answers to Echo's own errors (routing, and a 4xx
// from a middleware), by their status.
var echoRules = map[int]rule{
	http.StatusNotFound:              {code: "not_found", message: "no such path"},
	http.StatusMethodNotAllowed:      {code: "method_not_allowed", message: "only POST is allowed here"},
	http.StatusRequestEntityTooLarge: {code: "body_too_large", message: "request body too large"},
	http.StatusUnauthorized:          {code: "unauthorized", message: "valid credentials required"},
}

// internalError is the answer to anything else: the cause is logged, never
// sent.
var internalError = rule{status: http.StatusInternalServerError, code: "internal", message: "internal error"}

// errorBody is the JSON body of every refusal. Code is a stable word a
// client can switch on; Message says, in words, what is wrong. Neither ever
// carries an internal error string: those go to the log.
type errorBody struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field and Index point at the offending notification member, for
	// validation errors.
	Field string `json:"field,omitempty"`
	Index *int   `json:"index,omitempty"`
	// Quarantined is true once the refused body is stored on the
	// quarantine stream.
	Quarantined bool `json:"quarantined,omitempty"`
	// RetryAfter (seconds) is sent as a header on 429 and 503.
	RetryAfter int `json:"-"`
	// hangUp closes the connection after the answer.
	hangUp bool
}

// kind is the sentinel of the table an error answers as: a refusal that
// could not be kept before what it wraps, then notification's validation
// errors, then the sentinels in the table's order.
func kind(err error) error {
	var (
		nk *notKept
		ve *notification.ValidationError
	)
	switch {
	case errors.As(err, &nk):
		return errRefusedNotKept
	case errors.As(err, &ve):
		return errInvalidNotification
	}
	for _, r := range rules {
		if errors.Is(err, r.is) {
			return r.is
		}
	}
	return nil
}

// toError maps any error a handler or Echo returns onto the response.
// This is the one place where errors become statuses and bodies.
func toError(err error) *errorBody {
	k := kind(err)
	if k == nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			if a, ok := echoRules[he.Code]; ok {
				return &errorBody{Status: he.Code, Code: a.code, Message: a.message}
			}
			if he.Code >= 400 && he.Code < 500 {
				return &errorBody{Status: he.Code, Code: "bad_request", Message: http.StatusText(he.Code)}
			}
		}
		return &errorBody{Status: internalError.status, Code: internalError.code, Message: internalError.message}
	}
	var a rule
	for _, a = range rules {
		if a.is == k {
			break
		}
	}
	out := &errorBody{Status: a.status, Code: a.code, Message: a.message, hangUp: a.hangUp}
	var (
		nk *notKept
		ve *notification.ValidationError
		tl *bodyTooLarge
		ri *retryIn
		kp *kept
	)
	switch k {
	case errRefusedNotKept:
		errors.As(err, &nk)
		out.Message = "the body was refused (" + toError(nk.refusal).Message + ") and could not be kept for inspection now; retry later"
	case errInvalidNotification:
		errors.As(err, &ve)
		out.Message, out.Field = ve.Error(), ve.Field
		if ve.Index >= 0 {
			idx := ve.Index
			out.Index = &idx
		}
	case errBodyTooLarge:
		if errors.As(err, &tl) {
			out.Message = tl.Error()
		}
	}
	if out.Message == "" {
		out.Message = err.Error()
	}
	if a.retry {
		out.RetryAfter = retryAfterSeconds
		if errors.As(err, &ri) {
			out.RetryAfter = max(int(ri.after.Seconds()+0.999), 1)
		}
	}
	// Only a refusal, not what became of it, can have been kept.
	out.Quarantined = k != errRefusedNotKept && errors.As(err, &kp)
	return out
}

// errorHandler is Echo's HTTPErrorHandler.
func errorHandler(log logrus.FieldLogger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		e := toError(err)
		c.Set(ctxError, e)
		if e.Status >= 500 {
			log.WithError(err).WithField("status", e.Status).Error("request failed")
		}
		h := c.Response().Header()
		if e.RetryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		if e.hangUp {
			h.Set(echo.HeaderConnection, "close")
		}
		if e.Status == http.StatusMethodNotAllowed {
			h.Set("Allow", http.MethodPost)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(e.Status)
			return
		}
		_ = c.JSON(e.Status, e)
	}
}
