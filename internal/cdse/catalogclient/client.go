// Package catalogclient is a client of the catalogue's OData v1 API: the
// subscription service (create, list, get, update, delete; Read and Ack of
// PULL queues) and the Products listing. Every call carries a bearer token
// from a TokenSource, asked with the call's context; 429 and 5xx answers are retried with bounded,
// jittered backoff that honours Retry-After; every error names the
// operation, the HTTP status and the server's message.
package catalogclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/cdse"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
)

// DefaultBaseURL is the real catalogue (internal/cdse, the one home of the
// documented addresses).
const DefaultBaseURL = cdse.CatalogueURL

// Sentinel errors callers act on.
var (
	ErrUnauthorized = errors.New("not authorized")
	ErrNotFound     = errors.New("not found")
)

// APIError is a non-2xx answer.
type APIError struct {
	Op      string // "create subscription"
	Status  int
	Message string // the server's message
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Status, e.Message)
}

// Unwrap maps statuses onto the sentinel errors.
func (e *APIError) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrUnauthorized
	case http.StatusNotFound:
		return ErrNotFound
	}
	return nil
}

// TokenSource gives the bearer token of a call (internal/cdse/cdselogin's
// PasswordSource); ctx bounds the login, so a hung identity provider holds
// no caller longer than its context.
type TokenSource interface {
	Token(ctx context.Context) (*oauth2.Token, error)
}

// invalidator is a TokenSource that can drop a token the API refused
// (cdselogin.PasswordSource): a 401 then renews it once, as a token
// revoked or expired early (a clock skew, a session ended on the server)
// must not fail the call.
type invalidator interface {
	Invalidate(stale *oauth2.Token)
}

// Client calls the catalogue.
type Client struct {
	base   string
	http   *http.Client
	tokens TokenSource
	// MaxAttempts bounds the tries of one call on 429/5xx (default 4).
	MaxAttempts int
	// Backoff is the first wait between tries (default 500 ms, doubling, with
	// jitter, at most 30 s; Retry-After wins when given).
	Backoff time.Duration
}

// New returns a client of the API at baseURL (".../odata/v1").
func New(baseURL string, tokens TokenSource, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), http: hc, tokens: tokens, MaxAttempts: 4, Backoff: 500 * time.Millisecond}
}

// do sends one request (retrying 429/5xx) and decodes a 2xx body into out.
func (c *Client) do(ctx context.Context, op, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	backoff := retry.Backoff{First: c.Backoff, Max: 30 * time.Second}
	renewed := false
	for attempt := 1; ; attempt++ {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return fmt.Errorf("%s: login: %w", op, err)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		req.Header.Set("Accept", "application/json")
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if attempt < c.MaxAttempts && ctx.Err() == nil {
				if err := retry.Sleep(ctx, backoff.Next()); err != nil {
					return fmt.Errorf("%s: %w", op, err)
				}
				continue
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if inv, ok := c.tokens.(invalidator); ok && resp.StatusCode == http.StatusUnauthorized && !renewed {
			// Once per call: a second 401 with a new token is an answer.
			renewed = true
			inv.Invalidate(tok)
			attempt--
			continue
		}
		if resp.StatusCode/100 == 2 {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("%s: decode response: %w", op, err)
				}
			}
			return nil
		}
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if retryable && attempt < c.MaxAttempts {
			d := backoff.Next()
			if ra, ok := retry.RetryAfter(resp.Header.Get("Retry-After"), time.Now(), maxRetryAfter); ok {
				d = ra
			}
			if err := retry.Sleep(ctx, d); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			continue
		}
		return &APIError{Op: op, Status: resp.StatusCode, Message: serverMessage(resp.StatusCode, data)}
	}
}

// serverMessage extracts the message of the catalogue's error bodies:
// {"detail":{"message":...}}, {"detail":[{"loc":...,"msg":...}]} or
// {"error":{"message":...}}.
func serverMessage(status int, data []byte) string {
	var v struct {
		Detail json.RawMessage `json:"detail"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &v) == nil {
		var one struct {
			Message string `json:"message"`
		}
		var many []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		}
		switch {
		case json.Unmarshal(v.Detail, &one) == nil && one.Message != "":
			return one.Message
		case json.Unmarshal(v.Detail, &many) == nil && len(many) > 0:
			var parts []string
			for _, m := range many {
				loc := make([]string, len(m.Loc))
				for i, l := range m.Loc {
					loc[i] = fmt.Sprint(l)
				}
				parts = append(parts, strings.Join(loc, ".")+": "+m.Msg)
			}
			return strings.Join(parts, "; ")
		case v.Error != nil && v.Error.Message != "":
			return v.Error.Message
		}
	}
	if s := strings.TrimSpace(string(data)); s != "" && len(s) < 300 {
		return s
	}
	return http.StatusText(status)
}

// maxRetryAfter bounds the wait a server's Retry-After may ask of one
// call, so that a call's time stays bounded by what its caller expects.
const maxRetryAfter = 5 * time.Minute

func key(id string) string { return "(" + url.PathEscape(id) + ")" }

// CreateSubscription creates a subscription and returns it.
func (c *Client) CreateSubscription(ctx context.Context, req SubscriptionRequest) (*Subscription, error) {
	var s Subscription
	return &s, c.do(ctx, "create subscription", http.MethodPost, "/Subscriptions", nil, req, &s)
}

// ListSubscriptions returns the account's subscriptions.
func (c *Client) ListSubscriptions(ctx context.Context) ([]Subscription, error) {
	var out []Subscription
	return out, c.do(ctx, "list subscriptions", http.MethodGet, "/Subscriptions/Info", nil, nil, &out)
}

// GetSubscription returns one subscription.
func (c *Client) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	var s Subscription
	return &s, c.do(ctx, "get subscription "+id, http.MethodGet, "/Subscriptions"+key(id), nil, nil, &s)
}

// UpdateSubscription changes a subscription (Status; for push also the
// endpoint and its credentials).
func (c *Client) UpdateSubscription(ctx context.Context, id string, u SubscriptionUpdate) (*Subscription, error) {
	var s Subscription
	return &s, c.do(ctx, "update subscription "+id, http.MethodPatch, "/Subscriptions"+key(id), nil, u, &s)
}

// DeleteSubscription deletes (cancels) a subscription.
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	return c.do(ctx, "delete subscription "+id, http.MethodDelete, "/Subscriptions"+key(id), nil, nil, nil)
}

// Read returns up to top (1..20) notifications of a PULL queue, oldest first,
// each with its raw JSON.
func (c *Client) Read(ctx context.Context, id string, top int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	q := url.Values{"$top": {strconv.Itoa(top)}}
	return out, c.do(ctx, "read subscription "+id, http.MethodGet, "/Subscriptions"+key(id)+"/Read", q, nil, &out)
}

// Ack acknowledges ackID and every earlier notification of the queue.
func (c *Client) Ack(ctx context.Context, id, ackID string) (*QueueStatus, error) {
	var st QueueStatus
	q := url.Values{"$ackid": {ackID}}
	return &st, c.do(ctx, "ack subscription "+id, http.MethodPost, "/Subscriptions"+key(id)+"/Ack", q, nil, &st)
}

// GetProduct returns one product entity, raw.
func (c *Client) GetProduct(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, "get product "+id, http.MethodGet, "/Products"+key(id), nil, nil, &out)
}

// Query is one listing request of an entity set: Products or
// DeletedProducts.
type Query struct {
	EntitySet string // "Products", "DeletedProducts"
	Filter    string
	OrderBy   string // one documented property and a direction: "PublicationDate asc"
	Top       int
	Skip      int // only to walk a tie: the catalogue refuses more than 10 000
	// Count asks for the total number of matches (@odata.count).
	Count bool
}

// Page is one page of a listing.
type Page struct {
	Value []json.RawMessage
	// Count is the total number of matches, when asked for (-1 otherwise).
	Count int64
}

// List returns one page of q, with the entities' attributes. It never
// follows @odata.nextLink: the catalogue refuses $skip beyond 10 000 and
// then stops giving the link, so callers page by date instead (Lister).
func (c *Client) List(ctx context.Context, q Query) (Page, error) {
	var page struct {
		Value []json.RawMessage `json:"value"`
		Count *int64            `json:"@odata.count"`
	}
	v := url.Values{"$filter": {q.Filter}, "$top": {strconv.Itoa(q.Top)}, "$expand": {"Attributes"}}
	if q.OrderBy != "" {
		v.Set("$orderby", q.OrderBy)
	}
	if q.Count {
		v.Set("$count", "True")
	}
	if q.Skip > 0 {
		v.Set("$skip", strconv.Itoa(q.Skip))
	}
	set := q.EntitySet
	if set == "" {
		set = "Products"
	}
	err := c.do(ctx, "list "+set, http.MethodGet, "/"+set, v, nil, &page)
	out := Page{Value: page.Value, Count: -1}
	if page.Count != nil {
		out.Count = *page.Count
	}
	return out, err
}
