// Package status is what a running receiver says about itself on its admin
// port (GET /status), shared by the receiver, which serves it, and
// `register status`, which reads it and joins it with what the catalogue
// says. It holds no secret: user names, never passwords.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Path is where the admin listener serves it.
const Path = "/status"

// Receiver is the receiver's view of itself.
type Receiver struct {
	Version string `json:"version"`
	// Ready is what /readyz answers; NotReady its reason.
	Ready    bool   `json:"ready"`
	NotReady string `json:"notReady,omitempty"`
	// Webhook is nil when the webhook is off.
	Webhook *Webhook `json:"webhook,omitempty"`
	Sources []Source `json:"sources"`
	// Stream and Quarantine are nil when NATS cannot tell.
	Stream     *Stream `json:"stream,omitempty"`
	Quarantine *Stream `json:"quarantine,omitempty"`
	// Watermarks are the reconciler's, by event.
	Watermarks map[string]time.Time `json:"reconcileWatermarks,omitempty"`
}

// Webhook is the PUSH endpoint as the receiver serves it.
type Webhook struct {
	Path string `json:"path"`
	// Username is the Basic-auth user the catalogue must send (htpasswd
	// users besides it are not listed).
	Username string `json:"username"`
	TLS      bool   `json:"tls"`
}

// Source is one enabled source of notifications.
type Source struct {
	Name string `json:"name"` // push, pull, reconcile, or another source's name
	// Subscription is the PULL subscription's id.
	Subscription string `json:"subscription,omitempty"`
	// LastStored is when JetStream last confirmed one of its messages
	// (stored or duplicate) since the process started; nil if never.
	LastStored *time.Time `json:"lastStored,omitempty"`
	// Stopped is why the source ended while the receiver runs on (a PULL
	// subscription deleted); the receiver is not ready meanwhile.
	Stopped string `json:"stopped,omitempty"`
}

// Stream is a stream's state.
type Stream struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// LastTime is when its newest message was stored (zero when empty).
	LastTime time.Time `json:"lastTime,omitzero"`
}

// Fetch reads a receiver's status from its admin base URL
// (http://host:9090).
func Fetch(ctx context.Context, client *http.Client, admin string) (*Receiver, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(admin, "/")+Path, nil)
	if err != nil {
		return nil, fmt.Errorf("receiver status: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("receiver status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("receiver status: %s answered %s: %s", req.URL, resp.Status, strings.TrimSpace(string(b)))
	}
	var r Receiver
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("receiver status: %s: %w", req.URL, err)
	}
	return &r, nil
}
