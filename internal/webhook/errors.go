package webhook

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
)

// Error is the JSON body of every refusal. Code is a stable word a client can
// switch on; Message says, in words, what is wrong. Neither ever carries an
// internal error string: those go to the log.
type Error struct {
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
	// cause is logged, never sent.
	cause error
	// keep, for a body that arrived whole but cannot be decoded, holds it
	// as received, and reason the quarantine's word for it.
	keep   []byte
	reason string
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.cause }

func newError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// retryAfterSeconds is what a 503 asks the sender to wait.
const retryAfterSeconds = 5

// toError maps any error a handler or Echo returns onto the response.
// This is the one place where errors become statuses.
func toError(err error) *Error {
	var (
		e   *Error
		ve  *notification.ValidationError
		he  *echo.HTTPError
		idx int
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &ve):
		out := newError(http.StatusBadRequest, "invalid_notification", ve.Error())
		out.Field = ve.Field
		if ve.Index >= 0 {
			idx = ve.Index
			out.Index = &idx
		}
		return out
	case errors.Is(err, notification.ErrTooMany):
		return newError(http.StatusRequestEntityTooLarge, "too_many_notifications", err.Error())
	case errors.Is(err, publish.ErrTooLarge):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: "message_too_large",
			Message: "a notification is larger than the NATS server accepts", cause: err}
	case errors.Is(err, errNoRoomForBody):
		return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "too many request bodies are being received now; retry later", RetryAfter: retryAfterSeconds, cause: err}
	case errors.Is(err, publish.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "the notification could not be stored now; retry later", RetryAfter: retryAfterSeconds, cause: err}
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return newError(he.Code, "not_found", "no such path")
		case http.StatusMethodNotAllowed:
			return newError(he.Code, "method_not_allowed", "only POST is allowed here")
		case http.StatusRequestEntityTooLarge:
			return newError(he.Code, "body_too_large", "request body too large")
		case http.StatusUnauthorized:
			return newError(he.Code, "unauthorized", "valid credentials required")
		}
		if he.Code >= 400 && he.Code < 500 {
			return newError(he.Code, "bad_request", http.StatusText(he.Code))
		}
	}
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error", cause: err}
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
