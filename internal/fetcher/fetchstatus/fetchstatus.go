// Package fetchstatus is what a running fetcher says about itself on its
// admin port (GET /status): served by the fetcher, read by `fetcher
// status`. It holds no secret.
package fetchstatus

import (
	"context"
	"net/http"
	"time"

	"github.com/cdse-jetstream/receiver/internal/platform/adminpage"
)

// Fetcher is what a running fetcher says about itself on its admin port
// (GET /status), read by `fetcher status`. It holds no secret.
type Fetcher struct {
	Version string `json:"version"`
	// Ready is what /readyz answers; NotReady its failing checks, each
	// with its reason.
	Ready    bool              `json:"ready"`
	NotReady map[string]string `json:"notReady,omitempty"`
	// Consumer is the fetcher's consumer on the product stream; nil with
	// ConsumerError when NATS could not tell.
	Consumer      *FetchConsumer `json:"consumer,omitempty"`
	ConsumerError string         `json:"consumerError,omitempty"`
	// Downloads are this replica's downloads under way.
	Downloads []Download `json:"downloads"`
	// LastStored are the products this replica stored last, newest first.
	LastStored []Stored `json:"lastStored"`
	// Failures count this replica's downloads that failed since it
	// started, by reason (not_found, checksum, attempts, ...): one
	// product retried counts once a try.
	Failures map[string]int64 `json:"failures"`
}

// FetchConsumer is the fetcher's durable consumer as NATS tells it; every
// replica shares it.
type FetchConsumer struct {
	Stream string `json:"stream"`
	Name   string `json:"name"`
	// Waiting are the product events not yet delivered; InFlight those
	// delivered and not yet acknowledged (downloading, or waiting to be
	// tried again).
	Waiting  uint64 `json:"waiting"`
	InFlight int    `json:"inFlight"`
}

// Download is one download under way.
type Download struct {
	ProductID string `json:"productId"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// Bytes are those held (resumed ones included) of Size (0 unknown).
	Bytes int64 `json:"bytes"`
	Size  int64 `json:"size"`
	// ResumedAt is the byte the running request began at.
	ResumedAt int64 `json:"resumedAt,omitempty"`
	// Rate is bytes a second; ETA the time left at that rate ("" unknown).
	Rate    float64   `json:"rate"`
	ETA     string    `json:"eta,omitempty"`
	Started time.Time `json:"started"`
	// Waiting says why no byte flows ("" while they do).
	Waiting string `json:"waiting,omitempty"`
}

// Stored is a product stored.
type Stored struct {
	ProductID string    `json:"productId"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Size      int64     `json:"size"`
	Verified  bool      `json:"verified"`
	At        time.Time `json:"at"`
	Took      string    `json:"took"`
	// AlreadyThere: the target held it already (not downloaded).
	AlreadyThere bool `json:"alreadyThere,omitempty"`
}

// Read reads a fetcher's status from its admin base URL
// (http://host:9091).
func Read(ctx context.Context, client *http.Client, admin string) (*Fetcher, error) {
	return adminpage.Get[Fetcher](ctx, client, admin, adminpage.StatusPath, "fetcher status")
}
