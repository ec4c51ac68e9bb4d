package cdsesim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/notification"
)

func TestFilter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s2 := NewProduct(Sentinel2, now, nil)
	s2.Attributes = append(s2.Attributes, Attribute{"cloudCover", 12.5, "Double"}, Attribute{"relativeOrbitNumber", int64(108), "Integer"})
	for i, a := range s2.Attributes {
		if a.Name == "productType" {
			s2.Attributes[i].Value = "S2MSI2A"
		}
		if a.Name == "cloudCover" && a.Value != 12.5 {
			s2.Attributes = append(s2.Attributes[:i], s2.Attributes[i+1:]...)
			break
		}
	}
	tests := []struct {
		filter string
		want   bool
	}{
		{"", true},
		{"Collection/Name eq 'SENTINEL-2'", true},
		{"Collection/Name eq 'SENTINEL-1'", false},
		{"Collection/Name eq 'SENTINEL-1' or Collection/Name eq 'SENTINEL-2'", true},
		{"not (Collection/Name eq 'SENTINEL-2')", false},
		{"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')", true},
		{"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 40.00)", true},
		{"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value lt 10)", false},
		{"Attributes/OData.CSC.IntegerAttribute/any(a:a/Name eq 'relativeOrbitNumber' and a/OData.CSC.IntegerAttribute/Value eq 108)", true},
		{"ContentDate/Start gt 2022-05-03T00:00:00.000Z and PublicationDate ge 2026-11-22T10:00:00Z", true},
		{"PublicationDate lt 2026-11-22T09:00:00Z", false},
		{"startswith(Name,'S2') and contains(Name,'_MSI')", true},
		{"(Collection/Name eq 'SENTINEL-2') and not startswith(Name,'S1')", true},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := ParseFilter(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Match(s2); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{
		"Collection/Name eq",
		"Foo/Bar eq 'x'",
		"OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((0 0,1 0,1 1,0 0))')",
		"Collection/Name eq 'SENTINEL-2' xor Name eq 'a'",
		"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 5)",
		"(Collection/Name eq 'SENTINEL-2'",
	} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted unsupported syntax", bad)
		}
	}
}

func TestGeneratedProductsDecode(t *testing.T) {
	// Every generated notification is one the receiver accepts, with the
	// right collection.
	now := time.Now()
	for _, m := range Missions {
		p := NewProduct(m, now, nil)
		body, _ := json.Marshal(notificationJSON{Context: "$metadata#Notification/$entity", SubscriptionEvent: "created", ProductID: p.ID, ProductName: p.Name, SubscriptionID: "7d3f9c2e-5b1a-4c8d-9e6f-0a1b2c3d4e5f", NotificationDate: fmtTime(now), Value: p.Entity()})
		ns, err := notification.Parse(body, 1)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if ns[0].Collection != p.Collection || !strings.HasPrefix(p.Name, string(m)) {
			t.Errorf("%s: collection %q name %q", m, ns[0].Collection, p.Name)
		}
		if len(body) < 2000 {
			t.Errorf("%s: %d-byte notification is not realistic", m, len(body))
		}
	}
}

// endpoint records PUSH deliveries and fails the first `fail` of them.
type endpoint struct {
	mu    sync.Mutex
	fail  int
	got   []string
	auths []string
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u, p, _ := r.BasicAuth()
	e.auths = append(e.auths, u+":"+p)
	if e.fail > 0 {
		e.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	b, _ := io.ReadAll(r.Body)
	e.got = append(e.got, string(b))
	w.WriteHeader(http.StatusNoContent)
}

func addSub(s *Sim, sub *subscription) {
	sub.filter, _ = ParseFilter(sub.FilterParam)
	s.subs[sub.ID] = sub
}

func TestPushSender(t *testing.T) {
	tests := []struct {
		name      string
		fail      int
		duplicate bool
		status    string
		delivered int
		dropped   int64
		attempts  int64
	}{
		{"delivered", 0, false, "running", 1, 0, 1},
		{"retried then delivered", 3, false, "running", 1, 0, 4},
		{"dropped after three retries", 4, false, "running", 0, 1, 4},
		{"duplicate sends", 0, true, "running", 2, 0, 2},
		{"paused gets nothing", 0, false, "paused", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &endpoint{fail: tt.fail}
			hs := httptest.NewServer(ep)
			defer hs.Close()
			s := New(Options{PushBackoff: time.Millisecond})
			defer s.Close()
			s.SetDuplicateSends(tt.duplicate)
			addSub(s, &subscription{owner: "u", ID: "9c0e5f2a-1b2c-4d3e-8f4a-5b6c7d8e9f00", SubscriptionType: "push", Status: tt.status, SubscriptionEvent: []string{"created"},
				FilterParam: "Collection/Name eq 'SENTINEL-2'", NotificationEndpoint: hs.URL + "/notifications", NotificationEpUsername: "cdse", NotificationEpPassword: "pw"})
			s.Generate(Sentinel1, 1) // filtered out
			s.Generate(Sentinel2, 1)
			s.WaitPushes()
			st := s.Stats()
			if len(ep.got) != tt.delivered || st.PushDropped != tt.dropped || st.PushAttempts != tt.attempts {
				t.Errorf("delivered %d dropped %d attempts %d", len(ep.got), st.PushDropped, st.PushAttempts)
			}
			for _, a := range ep.auths {
				if a != "cdse:pw" {
					t.Errorf("Basic auth %q", a)
				}
			}
			for _, b := range ep.got {
				if ns, err := notification.Parse([]byte(b), 1); err != nil || ns[0].Collection != "SENTINEL-2" {
					t.Errorf("pushed body not accepted: %v", err)
				}
			}
		})
	}
}

func TestAdminAPI(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call(http.MethodPost, "/sim/products", `{"mission":"S5P","count":2}`)
	var created []struct{ Id, Name, Collection string }
	if code != 201 || json.Unmarshal([]byte(body), &created) != nil || len(created) != 2 || created[0].Collection != "SENTINEL-5P" {
		t.Fatalf("create: %d %s", code, body)
	}
	tests := []struct {
		method, path, body string
		code               int
	}{
		{http.MethodPost, "/sim/products/" + created[0].Id + "/modify", "", 204},
		{http.MethodPost, "/sim/products/" + created[0].Id + "/delete", `{"cause":"Obsolete product"}`, 204},
		{http.MethodPost, "/sim/products/" + created[0].Id + "/modify", "", 404}, // deleted
		{http.MethodPost, "/sim/products/nope/delete", "", 404},
		{http.MethodPost, "/sim/products", `{"mission":"S9"}`, 400},
		{http.MethodPost, "/sim/products", `{"count":20000}`, 400},
		{http.MethodPost, "/sim/config", `{"duplicateSends":true}`, 200},
		{http.MethodGet, "/sim/stats", "", 200},
		{http.MethodGet, "/sim/nothing", "", 404},
	}
	for _, tt := range tests {
		if code, body := call(tt.method, tt.path, tt.body); code != tt.code {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, code, body, tt.code)
		}
	}
	if !s.duplicate.Load() {
		t.Error("duplicateSends not set")
	}
	// The deleted product is gone from the listing; the other one is there.
	s.mu.Lock()
	deleted := !s.products[created[0].Id].DeletionDate.IsZero()
	s.mu.Unlock()
	if !deleted {
		t.Error("product not deleted")
	}
	// OData without a token: 401, no body.
	if code, _ := call(http.MethodGet, "/odata/v1/Subscriptions/Info", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
}
