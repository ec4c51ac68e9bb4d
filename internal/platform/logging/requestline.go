package logging

import "github.com/sirupsen/logrus"

// The line per request of the webhook: what it says (RequestLine) and who
// writes it (RequestLog). It is the log's schema, here rather than in the
// webhook, so that the log's fast writer of it (requestLineWriter) and its
// test need nothing of the webhook.

// RequestLine is what the log line of one request says.
type RequestLine struct {
	Method    string
	Status    int
	LatencyMS float64
	Remote    string
	// Event, ProductID and Notifications describe the body, once decoded
	// (Notifications is 0 before that).
	Event         string
	ProductID     string
	Notifications int
	// Accepted and Duplicates count the outcome of a 200 (HasResult).
	HasResult            bool
	Accepted, Duplicates int
	// Outcome is "ok", "duplicate" or the error code; Reason the refusal's
	// message.
	Outcome, Reason string
}

// RequestLog writes the line per request. RequestEntries writes it as a
// logrus entry with the line's fields; RequestLogger gives the faster
// writer of the same JSON line, for the receiver's own log.
type RequestLog interface {
	LogRequest(RequestLine)
}

// RequestEntries is the RequestLog of any logrus logger: an entry with the
// line's fields and the message "request".
type RequestEntries struct{ Log logrus.FieldLogger }

// LogRequest implements RequestLog.
func (l RequestEntries) LogRequest(r RequestLine) {
	l.Log.WithFields(r.Fields()).Log(r.Level(), "request")
}

// Level is warning for answers that say the receiver failed, info for all
// others.
func (r RequestLine) Level() logrus.Level {
	if r.Status >= 500 {
		return logrus.WarnLevel
	}
	return logrus.InfoLevel
}

// Fields are the line's logrus fields.
func (r RequestLine) Fields() logrus.Fields {
	f := logrus.Fields{
		"method":     r.Method,
		"status":     r.Status,
		"latency_ms": r.LatencyMS,
		"remote":     r.Remote,
		"outcome":    r.Outcome,
	}
	if r.Notifications > 0 {
		f["event"], f["product_id"], f["notifications"] = r.Event, r.ProductID, r.Notifications
	}
	if r.HasResult {
		f["accepted"], f["duplicates"] = r.Accepted, r.Duplicates
	}
	if r.Reason != "" {
		f["reason"] = r.Reason
	}
	return f
}
