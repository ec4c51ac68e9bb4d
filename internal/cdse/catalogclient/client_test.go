package catalogclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

type fixture struct {
	sim    *cdsesim.Sim
	srv    *httptest.Server
	client *Client
	clock  *cdsesim.Clock
}

func setup(t *testing.T, o cdsesim.Options, wrap func(http.Handler) http.Handler) fixture {
	t.Helper()
	c := cdsesim.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	o.Users = map[string]cdsesim.User{"alice": {Password: "alice-pw"}}
	o.Now = c.Now
	sim := cdsesim.New(o)
	var h http.Handler = sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "alice", Password: "alice-pw", Now: c.Now})
	cl := New(srv.URL+"/odata/v1", ts, nil)
	cl.Backoff = time.Millisecond
	return fixture{sim: sim, srv: srv, client: cl, clock: c}
}

func push(endpoint string) SubscriptionRequest {
	return SubscriptionRequest{SubscriptionType: "push", FilterParam: "Collection/Name eq 'SENTINEL-2'", SubscriptionEvent: []string{"created"},
		NotificationEndpoint: endpoint, NotificationEpUsername: "cdse", NotificationEpPassword: "endpoint-secret", Priority: 1}
}

func TestSubscriptionLifecycle(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	ctx := context.Background()
	s, err := f.client.CreateSubscription(ctx, push("https://hooks.example.org/notifications"))
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.Status != "running" || s.SubmissionDate.IsZero() || s.NotificationEndpoint != "https://hooks.example.org/notifications" {
		t.Errorf("created %+v", s)
	}
	raw, _ := json.Marshal(s)
	if strings.Contains(string(raw), "endpoint-secret") {
		t.Error("the API returned the endpoint password")
	}
	list, err := f.client.ListSubscriptions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("list: %v %+v", err, list)
	}
	paused := "paused"
	if u, err := f.client.UpdateSubscription(ctx, s.ID, SubscriptionUpdate{Status: &paused}); err != nil || u.Status != "paused" {
		t.Fatalf("pause: %v %+v", err, u)
	}
	if g, err := f.client.GetSubscription(ctx, s.ID); err != nil || g.Status != "paused" {
		t.Fatalf("get: %v %+v", err, g)
	}
	if err := f.client.DeleteSubscription(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.client.GetSubscription(ctx, s.ID)
	var ae *APIError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &ae) || ae.Status != 404 || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "get subscription") {
		t.Errorf("get after delete: %v", err)
	}
}

func TestErrors(t *testing.T) {
	f := setup(t, cdsesim.Options{MaxRunning: 1}, nil)
	ctx := context.Background()
	tests := []struct {
		name   string
		req    SubscriptionRequest
		status int
		msg    string
	}{
		{"type missing", SubscriptionRequest{FilterParam: "Collection/Name eq 'SENTINEL-1'"}, 422, "SubscriptionType"},
		{"type uppercase", SubscriptionRequest{SubscriptionType: "PUSH", NotificationEndpoint: "https://x.example"}, 422, "'push' or 'pull'"},
		{"push without endpoint", SubscriptionRequest{SubscriptionType: "push"}, 422, "NotificationEndpoint"},
		{"unsupported filter", SubscriptionRequest{SubscriptionType: "pull", FilterParam: "Foo/Bar eq 1"}, 400, "Invalid FilterParam"},
		{"bad events", SubscriptionRequest{SubscriptionType: "pull", SubscriptionEvent: []string{"created", "deleted"}}, 422, "SubscriptionEvent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.client.CreateSubscription(ctx, tt.req)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tt.status || !strings.Contains(ae.Message, tt.msg) {
				t.Fatalf("got %v, want %d with %q", err, tt.status, tt.msg)
			}
		})
	}
	t.Run("running limit", func(t *testing.T) {
		if _, err := f.client.CreateSubscription(ctx, push("https://a.example/n")); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.CreateSubscription(ctx, push("https://b.example/n"))
		if err == nil || !strings.Contains(err.Error(), "Maximum number of running subscriptions (1)") {
			t.Fatalf("over the limit: %v", err)
		}
	})
	t.Run("no token", func(t *testing.T) {
		bad := New(f.srv.URL+"/odata/v1", staticToken("forged"), nil)
		_, err := bad.ListSubscriptions(ctx)
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("forged token: %v", err)
		}
	})
}

type staticToken string

func (s staticToken) Token(context.Context) (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: string(s)}, nil
}

func TestRetries(t *testing.T) {
	var calls atomic.Int32
	failures := int32(2)
	f := setup(t, cdsesim.Options{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/Info") {
				if n := calls.Add(1); n <= failures {
					if n == 1 {
						w.Header().Set("Retry-After", "0")
						w.WriteHeader(http.StatusTooManyRequests)
						return
					}
					w.WriteHeader(http.StatusBadGateway)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	if _, err := f.client.ListSubscriptions(context.Background()); err != nil {
		t.Fatalf("after 429 and 502: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls, want 3", calls.Load())
	}
	// Bounded: a server that always fails is given up on.
	calls.Store(0)
	failures = 100
	_, err := f.client.ListSubscriptions(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || calls.Load() != int32(f.client.MaxAttempts) {
		t.Fatalf("always failing: %v after %d calls", err, calls.Load())
	}
}

func TestPullQueue(t *testing.T) {
	f := setup(t, cdsesim.Options{QueueCap: 30}, nil)
	ctx := context.Background()
	sub, err := f.client.CreateSubscription(ctx, SubscriptionRequest{SubscriptionType: "pull", SubscriptionEvent: []string{"created"}})
	if err != nil {
		t.Fatal(err)
	}
	f.sim.Generate(cdsesim.Sentinel2, 25)

	first, err := f.client.Read(ctx, sub.ID, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("read default: %v %d", err, len(first))
	}
	batch, err := f.client.Read(ctx, sub.ID, 20)
	if err != nil || len(batch) != 20 {
		t.Fatalf("read 20: %v %d", err, len(batch))
	}
	if string(batch[0]) != string(first[0]) {
		t.Error("Read is not oldest-first or not idempotent before Ack")
	}
	var n Notification
	json.Unmarshal(batch[9], &n)
	st, err := f.client.Ack(ctx, sub.ID, n.AckID)
	if err != nil || st.AckMessagesNum != 10 || st.CurrentQueueLength != 15 || st.MaxQueueLength != 30 {
		t.Fatalf("cumulative ack: %v %+v", err, st)
	}
	if _, err := f.client.Read(ctx, sub.ID, 21); err == nil {
		t.Error("$top 21 accepted")
	}
	// After three days only the short form remains.
	f.clock.Add(73 * time.Hour)
	old, _ := f.client.Read(ctx, sub.ID, 1)
	n = Notification{}
	json.Unmarshal(old[0], &n)
	if n.ProductName != "" || len(n.Value) != 0 || n.ProductID == "" || n.AckID == "" {
		t.Errorf("after retention: %s", old[0])
	}
	// Overflow drops the oldest.
	f.sim.Generate(cdsesim.Sentinel1, 20)
	if got := f.sim.Stats().QueueDropped; got != 5 {
		t.Errorf("dropped %d, want 5", got)
	}
	// A cancelled subscription answers 404.
	f.client.DeleteSubscription(ctx, sub.ID)
	if _, err := f.client.Read(ctx, sub.ID, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("read after cancel: %v", err)
	}
}

func TestGetProduct(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	ctx := context.Background()
	want := f.sim.Generate(cdsesim.Sentinel2, 1)[0]
	raw, err := f.client.GetProduct(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	var p Product
	if err := json.Unmarshal(raw, &p); err != nil || p.ID != want.ID || !strings.HasPrefix(p.Name, "S2") || p.PublicationDate.IsZero() {
		t.Fatalf("product: %v %+v", err, p)
	}
	if _, err := f.client.GetProduct(ctx, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown product: %v", err)
	}
}

func TestListingsOfTheSimulator(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	ctx := context.Background()
	ps := f.sim.Generate(cdsesim.Sentinel2, 5) // one instant: five equal PublicationDates
	f.clock.Add(time.Minute)
	if err := f.sim.ModifyProduct(ps[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := f.sim.DeleteProduct(ps[2].ID, "Corrupted product"); err != nil {
		t.Fatal(err)
	}
	since := "2026-11-22T10:00:30.000000Z"
	tests := []struct {
		name  string
		q     Query
		count int64
		ids   []string
	}{
		{"modified since", Query{Filter: "ModificationDate gt " + since, OrderBy: "ModificationDate asc", Top: 10, Count: true}, 1, []string{ps[1].ID}},
		{"deleted since", Query{EntitySet: "DeletedProducts", Filter: "DeletionDate gt " + since + " and Collection/Name eq 'SENTINEL-2'", OrderBy: "DeletionDate asc", Top: 10, Count: true}, 1, []string{ps[2].ID}},
		{"deleted products are not live", Query{Filter: "Id eq " + ps[2].ID, Top: 10, Count: true}, 0, nil},
	}
	for _, tt := range tests {
		page, err := f.client.List(ctx, tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, raw := range page.Value {
			var p Product
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.ID)
		}
		if page.Count != tt.count || strings.Join(got, ",") != strings.Join(tt.ids, ",") {
			t.Errorf("%s: count %d, ids %v; want %d, %v", tt.name, page.Count, got, tt.count, tt.ids)
		}
	}
	// Equal dates are ordered by Id (the catalogue adds that order itself).
	page, err := f.client.List(ctx, Query{Filter: "PublicationDate eq 2026-11-22T10:00:00.000000Z", OrderBy: "PublicationDate asc", Top: 10})
	if err != nil || len(page.Value) != 4 { // five, one deleted
		t.Fatalf("%v, %d", err, len(page.Value))
	}
	var prev Product
	for i, raw := range page.Value {
		var p Product
		json.Unmarshal(raw, &p)
		if i > 0 && p.ID <= prev.ID {
			t.Errorf("equal dates not ordered by Id: %s after %s", p.ID, prev.ID)
		}
		prev = p
	}
}

// TestSkipLimit: the catalogue refuses $skip beyond 10 000 with 422 and its
// body, and leaves out @odata.nextLink where the next page would need one.
func TestSkipLimit(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	f.sim.Generate(cdsesim.Sentinel3, 3)
	get := func(query string) (int, map[string]any) { t.Helper(); return f.get(t, "Products?"+query) }
	code, body := get("$skip=10001&$top=1")
	detail, _ := body["detail"].([]any)
	if code != http.StatusUnprocessableEntity || len(detail) != 1 || !strings.Contains(detail[0].(map[string]any)["msg"].(string), "less than or equal to 10000") {
		t.Fatalf("$skip=10001: %d %v", code, body)
	}
	if code, body := get("$skip=10000&$top=1"); code != 200 || body["@odata.nextLink"] != nil {
		t.Errorf("$skip=10000: %d, nextLink %v", code, body["@odata.nextLink"])
	}
	if code, body := get("$skip=0&$top=1"); code != 200 || body["@odata.nextLink"] == nil {
		t.Errorf("first page: %d, no nextLink", code)
	}
	// The client's error names the server's message.
	_, err := f.client.List(context.Background(), Query{Filter: "", Top: 1, OrderBy: "Name asc"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("unsupported $orderby: %v", err)
	}
}

// get sends GET <odata>/<path> with a token, as a client would write it,
// and returns the status and the decoded body.
func (f fixture) get(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	tok, err := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: f.srv.URL + cdsesim.TokenPath, Username: "alice", Password: "alice-pw", Now: f.clock.Now}).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/odata/v1/"+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestSimulatorIsAsStrictAsTheDocumentation: the listing forms the
// catalogue's OData documentation does not give are refused, with the
// catalogue's error bodies, so a test catches any return to them; those
// it gives work.
func TestSimulatorIsAsStrictAsTheDocumentation(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	ps := f.sim.Generate(cdsesim.Sentinel2, 3)
	if err := f.sim.DeleteProduct(ps[0].ID, "Reprocessed product"); err != nil {
		t.Fatal(err)
	}
	q := url.QueryEscape
	tests := []struct {
		name, path string
		status     int
		says       string
	}{
		{"one documented key", "Products?$orderby=" + q("PublicationDate asc") + "&$top=10", 200, ""},
		{"desc", "Products?$orderby=" + q("ContentDate/Start desc"), 200, ""},
		{"deleted by its date", "DeletedProducts?$orderby=" + q("DeletionDate asc") + "&$filter=" + q("DeletionCause eq 'Reprocessed product'"), 200, ""},
		{"a second key", "Products?$orderby=" + q("PublicationDate asc,Id asc"), 400, "one property only"},
		{"Id as the key", "Products?$orderby=" + q("Id asc"), 400, "cannot be ordered by"},
		{"an undocumented property", "Products?$orderby=" + q("Name asc"), 400, "cannot be ordered by"},
		{"Products' property on DeletedProducts", "DeletedProducts?$orderby=" + q("PublicationDate asc"), 400, "cannot be ordered by"},
		{"a direction", "Products?$orderby=" + q("PublicationDate up"), 400, "asc or desc"},
		{"Id gt", "Products?$filter=" + q("Id gt "+ps[1].ID), 400, "Id"},
		{"Id eq", "Products?$filter=" + q("Id eq '"+ps[1].ID+"'"), 200, ""},
		{"$top over 1000", "Products?$top=1001", 422, "less than or equal to 1000"},
		{"$top negative", "Products?$top=-1", 422, "greater than or equal to 0"},
		{"$skip over 10000", "Products?$skip=10001", 422, "less than or equal to 10000"},
		{"$count not a boolean", "Products?$count=yes", 422, "valid boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := f.get(t, tt.path)
			b, _ := json.Marshal(body)
			if status != tt.status || !strings.Contains(string(b), tt.says) {
				t.Errorf("%s: %d %s; want %d saying %q", tt.path, status, b, tt.status, tt.says)
			}
		})
	}
	// The deleted product keeps the cause the documentation's own example
	// shows, though its list of causes leaves it out.
	_, body := f.get(t, "DeletedProducts?$filter="+q("Id eq '"+ps[0].ID+"'"))
	if v, _ := body["value"].([]any); len(v) != 1 || v[0].(map[string]any)["DeletionCause"] != "Reprocessed product" {
		t.Errorf("deleted product: %v", body)
	}
}

// TestUnauthorizedRenewsTheTokenOnce: a token the API refuses (revoked,
// or expired early by a clock skew) is dropped and renewed once, and the
// call retried with the new one; a second 401 is the answer, no loop.
func TestUnauthorizedRenewsTheTokenOnce(t *testing.T) {
	var mu sync.Mutex
	var seen []string // the Authorization of each API request
	refuse := 1       // how many API requests get 401
	f := setup(t, cdsesim.Options{}, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/odata/") {
				mu.Lock()
				seen = append(seen, r.Header.Get("Authorization"))
				no := refuse > 0
				refuse--
				mu.Unlock()
				if no {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	ctx := context.Background()
	if _, err := f.client.ListSubscriptions(ctx); err != nil {
		t.Fatalf("after one 401: %v", err)
	}
	if len(seen) != 2 || seen[0] == seen[1] {
		t.Fatalf("requests %d, the retry with a new token: %v", len(seen), seen[0] != seen[1])
	}
	mu.Lock()
	seen, refuse = nil, 100
	mu.Unlock()
	var api *APIError
	if _, err := f.client.ListSubscriptions(ctx); !errors.As(err, &api) || api.Status != http.StatusUnauthorized || len(seen) != 2 {
		t.Errorf("a 401 every time: %v after %d requests, want the 401 after 2", err, len(seen))
	}
}
