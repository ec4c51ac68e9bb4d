package cdsesim

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
)

// TestFilter: the simulator's products, through the view it gives
// productfilter, match as their entities say. productfilter's own tests
// cover the language; these check the simulator's side of it.
func TestFilter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s2 := NewProduct(Sentinel2, now, nil)
	// Set what the generator draws at random: the tests depend on it.
	s2.Footprint = [][2]float64{{11, 45}, {12, 45}, {12, 46}, {11, 46}, {11, 45}}
	s2.Attributes = append(s2.Attributes, Attribute{"relativeOrbitNumber", int64(108), "Integer"}, Attribute{"sunAzimuth", 161.5, ""})
	for i, a := range s2.Attributes {
		switch a.Name {
		case "productType":
			s2.Attributes[i].Value = "S2MSI2A"
		case "cloudCover":
			s2.Attributes[i].Value = 12.5
		}
	}
	deleted := s2.clone()
	deleted.DeletionDate, deleted.DeletionCause = now.Add(time.Hour), "Duplicated product"
	tests := []struct {
		filter        string
		live, deleted bool
	}{
		{"", true, true},
		{"Collection/Name eq 'SENTINEL-2'", true, true},
		{"Collection/Name eq 'SENTINEL-1'", false, false},
		{"Collection/Name eq 'SENTINEL-1' or Collection/Name eq 'SENTINEL-2'", true, true},
		{"not (Collection/Name eq 'SENTINEL-2')", false, false},
		{"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')", true, true},
		{"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 40.00)", true, true},
		{"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value lt 10)", false, false},
		{"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'sunAzimuth' and att/OData.CSC.DoubleAttribute/Value gt 160)", true, true},
		{"Attributes/OData.CSC.IntegerAttribute/any(a:a/Name eq 'relativeOrbitNumber' and a/OData.CSC.IntegerAttribute/Value eq 108)", true, true},
		{"Attributes/OData.CSC.DateTimeOffsetAttribute/any(a:a/Name eq 'beginningDateTime' and a/OData.CSC.DateTimeOffsetAttribute/Value lt 2026-11-22T10:00:00Z)", true, true},
		{"ContentDate/Start gt 2022-05-03T00:00:00.000Z and PublicationDate ge 2026-11-22T10:00:00Z", true, false},
		{"PublicationDate lt 2026-11-22T09:00:00Z", false, false},
		{"startswith(Name,'S2') and contains(Name,'_MSI')", true, true},
		{"(Collection/Name eq 'SENTINEL-2') and not startswith(Name,'S1')", true, true},
		{"Online eq true", true, false},
		{"DeletionCause eq 'Duplicated product' and DeletionDate gt 2026-11-22T10:30:00Z", false, true},
		{"ContentLength gt 0", true, true},
		{"Id eq '" + s2.ID + "'", true, true},
		{"OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((11.5 45.5,13 45.5,13 47,11.5 47,11.5 45.5))')", true, true},
		{"OData.CSC.Intersects(area=geography'SRID=4326;POINT(12.5 45.5)')", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := productfilter.Parse(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := s2.matches(f); got != tt.live {
				t.Errorf("live: match = %v, want %v", got, tt.live)
			}
			if got := deleted.matches(f); got != tt.deleted {
				t.Errorf("deleted: match = %v, want %v", got, tt.deleted)
			}
		})
	}
}

// TestFilterViewAgreesWithEntity: what the simulator matches is what the
// receiver would match on the entity it is sent, for every mission.
func TestFilterViewAgreesWithEntity(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 2))
	var products []*Product
	for _, m := range Missions {
		for range 5 {
			p := NewProduct(m, now, r)
			products = append(products, p)
			d := p.clone()
			d.DeletionDate, d.DeletionCause = now.Add(time.Minute), "Corrupted product"
			products = append(products, d)
		}
	}
	products[2].Offline = true // "Online": false agrees too
	filters := []string{
		"Collection/Name eq 'SENTINEL-2'",
		"Collection/Name ne 'SENTINEL-5P'",
		"Online eq true",
		"ContentLength gt 160000", // sizes are 64 to 256 KiB
		"DeletionCause eq 'Corrupted product'",
		"ContentDate/Start ge 2026-11-22T08:00:00Z",
		"PublicationDate eq 2026-11-22T10:00:00Z",
		"ModificationDate ge 2026-11-22T10:00:00Z and OriginDate lt 2026-11-22T10:00:00Z",
		"DeletionDate gt 2026-11-22T10:00:00Z",
		"Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')",
		"Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 40.00)",
		"Attributes/OData.CSC.IntegerAttribute/any(att:att/Name eq 'orbitNumber' and att/OData.CSC.IntegerAttribute/Value gt 30000)",
		"Attributes/OData.CSC.DateTimeOffsetAttribute/any(att:att/Name eq 'beginningDateTime' and att/OData.CSC.DateTimeOffsetAttribute/Value ge 2026-11-22T08:00:00Z)",
		"OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((-180 -80,0 -80,0 70,-180 70,-180 -80))')",
		"OData.CSC.Intersects(area=geography'SRID=4326;MULTIPOLYGON(((0 0,90 0,90 70,0 70,0 0)),((-90 -80,-45 -80,-45 0,-90 0,-90 -80)))')",
	}
	matched := map[string]int{}
	for _, p := range products {
		raw, err := json.Marshal(p.Entity())
		if err != nil {
			t.Fatal(err)
		}
		e, err := productfilter.FromEntity(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range filters {
			f, err := productfilter.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			sim, rcv := p.matches(f), f.Match(&e)
			if sim != rcv {
				t.Errorf("%s (%s, deleted %v): simulator %v, entity %v", s, p.Name, !p.DeletionDate.IsZero(), sim, rcv)
			}
			if sim {
				matched[s]++
			}
		}
	}
	for _, s := range filters {
		if n := matched[s]; n == 0 || n == len(products) {
			t.Errorf("%s matches %d of %d products: not a useful check", s, n, len(products))
		}
	}
}

// TestListingFilter: the listings filter with productfilter and answer
// 400 for what it refuses, naming the position.
func TestListingFilter(t *testing.T) {
	s := New(Options{Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }})
	defer s.Close()
	ps := s.Generate(Sentinel2, 3)
	s.mu.Lock()
	ps[0].Footprint = [][2]float64{{179.5, -16}, {-179.5, -16}, {-179.5, -17}, {179.5, -17}, {179.5, -16}}
	s.mu.Unlock()
	list := func(set, filter string) (int, string) {
		rec := httptest.NewRecorder()
		s.listEntities(rec, httptest.NewRequest(http.MethodGet, "/odata/v1/"+set+"?$filter="+url.QueryEscape(filter), nil), set == "DeletedProducts")
		return rec.Code, rec.Body.String()
	}
	if code, body := list("Products", "OData.CSC.Intersects(area=geography'SRID=4326;POINT(-179.9 -16.5)')"); code != 200 || !strings.Contains(body, ps[0].ID) || strings.Contains(body, ps[1].ID) {
		t.Errorf("Intersects across the antimeridian: %d %s", code, body)
	}
	if code, body := list("Products", "Id eq '"+ps[2].ID+"'"); code != 200 || !strings.Contains(body, ps[2].ID) || strings.Contains(body, ps[1].ID) {
		t.Errorf("Id eq: %d %s", code, body)
	}
	for _, bad := range []string{
		"Id gt " + ps[0].ID,
		"PublicationDate eq 2026-11-22T10:00:00.000000Z and Id gt " + ps[0].ID,
		"Collection/Name eq 'SENTINEL-2' xor Name eq 'a'",
		"OData.CSC.Intersects(area=geography'SRID=3857;POINT(0 0)')",
	} {
		code, body := list("DeletedProducts", bad)
		if code != http.StatusBadRequest || !strings.Contains(body, "Invalid filter: at ") {
			t.Errorf("%s: %d %s, want 400 naming the position", bad, code, body)
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
	sub.filter, _ = productfilter.Parse(sub.FilterParam)
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
