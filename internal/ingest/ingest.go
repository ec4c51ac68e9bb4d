// Package ingest turns validated notifications into the messages every
// source publishes — the webhook (push), the PULL queue (pull) and the
// reconciler (reconcile) — so that all of them route and deduplicate
// exactly alike: same subject, same headers, same Nats-Msg-Id. The backfill
// command publishes through it too.
package ingest

import (
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
)

// Sources, the values of the Cdse-Source header.
const (
	SourcePush      = "push"
	SourcePull      = "pull"
	SourceReconcile = "reconcile"
	SourceBackfill  = "backfill"
)

// Messages builds one message per notification, its data the notification's
// own bytes.
func Messages(ns []notification.Notification, prefix, source string) []publish.Message {
	msgs := make([]publish.Message, len(ns))
	for i := range ns {
		n := &ns[i]
		h := n.Headers(source) // carries the dedupe key as Nats-Msg-Id
		msgs[i] = publish.Message{Subject: n.Subject(prefix), MsgID: h[notification.HeaderMsgID][0], Header: h, Data: n.Raw}
	}
	return msgs
}

// Outcome counts what JetStream said.
type Outcome struct {
	Accepted, Duplicates int
}

// Count tallies results.
func Count(results []publish.Result) Outcome {
	var o Outcome
	for _, r := range results {
		if r.Duplicate {
			o.Duplicates++
		} else {
			o.Accepted++
		}
	}
	return o
}
