package webhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/event"
)

// metrics of the webhook. Label values are fixed words (status codes,
// events, reasons): nothing from a request body or header becomes a label.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      prometheus.Histogram
	notifications *prometheus.CounterVec
	rejected      prometheus.Counter
	authFailures  *prometheus.CounterVec
	contentTypes  *prometheus.CounterVec
	notKept       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_http_requests_total",
			Help: "Webhook requests by HTTP status.",
		}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdse_receiver_http_request_duration_seconds",
			Help:    "Webhook request latency, from routing to response.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_notifications_total",
			Help: "Valid notifications by event and outcome (accepted, duplicate, failed: not stored, the sender was told to retry).",
		}, []string{"event", "outcome"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdse_receiver_notifications_rejected_total",
			Help: "Request bodies refused as invalid (400/413) after authentication.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_auth_failures_total",
			Help: "Webhook requests refused for credentials, by reason (missing, malformed, invalid; limited: answered 429; unchecked: no bcrypt check could run in time, answered 503).",
		}, []string{"reason"}),
		contentTypes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_unexpected_content_type_total",
			Help: "Authenticated requests whose Content-Type was not application/json (UTF-8), by kind (json, text, form, other, missing); the body decides whether they are accepted.",
		}, []string{"type"}),
		notKept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_bodies_not_kept_total",
			Help: "Authenticated requests whose body could not be kept, by reason (too_large: over RECEIVER_MAX_BODY; incomplete: it did not arrive whole; busy: no room in the memory for request bodies in time, answered 503).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.notifications, m.rejected, m.authFailures, m.contentTypes, m.notKept} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register webhook metrics: %w", err)
		}
	}
	// Pre-create the series so dashboards and alerts see zeros.
	for _, ev := range event.Kinds {
		for _, o := range []string{"accepted", "duplicate", "failed"} {
			m.notifications.WithLabelValues(string(ev), o)
		}
	}
	for _, r := range []string{"missing", "malformed", "invalid", "limited", "unchecked"} {
		m.authFailures.WithLabelValues(r)
	}
	for _, r := range []string{"too_large", "incomplete", "busy"} {
		m.notKept.WithLabelValues(r)
	}
	// The answers alerts and dashboards look at first.
	for _, code := range []string{"200", "400", "401", "503"} {
		m.requests.WithLabelValues(code)
	}
	return m, nil
}
