package catalogclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/notification"
)

// Lists is the call a Lister pages through (Client.List).
type Lists interface {
	List(ctx context.Context, q Query) (Page, error)
}

// Kind says where the catalogue lists the products behind one event and by
// which date they are ordered.
type Kind struct {
	Event     event.Kind
	EntitySet string // Products, DeletedProducts
	DateField string // PublicationDate, ModificationDate, DeletionDate
}

// KindOf is the listing of an event: created products by PublicationDate,
// modified ones by ModificationDate (both in Products), deleted ones by
// DeletionDate in DeletedProducts.
func KindOf(ev event.Kind) Kind {
	switch ev {
	case event.Modified:
		return Kind{ev, "Products", "ModificationDate"}
	case event.Deleted:
		return Kind{ev, "DeletedProducts", "DeletionDate"}
	}
	return Kind{event.Created, "Products", "PublicationDate"}
}

// ParseEvents reads a comma-separated list of events ("created,deleted").
func ParseEvents(s string) ([]event.Kind, error) {
	var out []event.Kind
	seen := map[event.Kind]bool{}
	for _, f := range strings.Split(s, ",") {
		ev := event.Kind(strings.TrimSpace(f))
		switch ev {
		case event.Created, event.Modified, event.Deleted:
		default:
			return nil, fmt.Errorf("unknown event %q: want created, modified, deleted", ev)
		}
		if !seen[ev] {
			seen[ev] = true
			out = append(out, ev)
		}
	}
	return out, nil
}

// Cursor is a place in a listing: just after the product with this date
// and Id. The zero Cursor is the start.
type Cursor struct {
	Date time.Time `json:"date"`
	ID   string    `json:"id"`
}

// Item is one listed product.
type Item struct {
	Raw  json.RawMessage
	ID   string
	Name string
	// Date is the kind's date (PublicationDate, ModificationDate or
	// DeletionDate); Published and Modified are the product's own.
	Date, Published, Modified time.Time
}

// ODataTime is how dates are written into filters: the catalogue keeps
// microseconds.
const ODataTime = "2006-01-02T15:04:05.000000Z"

// Range is what one listing covers: the kind's date from From (inclusive)
// up to Until (exclusive; zero for no end), continuing after After.
type Range struct {
	Filter string // the user's OData filter, "" for none
	From   time.Time
	Until  time.Time
	After  Cursor
}

// filter pages by key rather than by $skip: the catalogue refuses $skip
// beyond 10 000 (HTTP 422) and then leaves out @odata.nextLink, so a pass
// that followed nextLink would stall there. A date greater than the last
// one seen, or equal with a greater Id, continues exactly after it however
// many products share a date.
func (k Kind) filter(r Range) string {
	d := k.DateField
	var parts []string
	if r.After.ID == "" {
		parts = append(parts, d+" ge "+r.From.UTC().Format(ODataTime))
	} else {
		at := r.After.Date.UTC().Format(ODataTime)
		parts = append(parts, "("+d+" gt "+at+" or ("+d+" eq "+at+" and Id gt "+r.After.ID+"))")
	}
	if !r.Until.IsZero() {
		parts = append(parts, d+" lt "+r.Until.UTC().Format(ODataTime))
	}
	if strings.TrimSpace(r.Filter) != "" {
		parts = append(parts, "("+r.Filter+")")
	}
	return strings.Join(parts, " and ")
}

// Lister reads one page of a kind's listing at a time, within a request
// rate.
type Lister struct {
	cat      Lists
	limit    *rate.Limiter
	pageSize int
}

// NewLister lists through cat, pageSize products a request (at most 1000),
// at most perSec requests a second.
func NewLister(cat Lists, pageSize int, perSec float64) *Lister {
	return &Lister{cat: cat, limit: rate.NewLimiter(rate.Limit(perSec), 1), pageSize: min(max(pageSize, 1), 1000)}
}

// ErrNoProgress means the catalogue answered a page that does not continue
// after the cursor: paging by key would loop.
var ErrNoProgress = errors.New("listing did not advance past the last product")

// Page returns the next page of k within r, in the kind's date order (Id
// breaking ties), and the total number of matches when count is set (-1
// otherwise). Fewer items than the page size means the listing is done.
func (l *Lister) Page(ctx context.Context, k Kind, r Range, count bool) ([]Item, int64, error) {
	if err := l.limit.Wait(ctx); err != nil {
		return nil, 0, err
	}
	page, err := l.cat.List(ctx, Query{EntitySet: k.EntitySet, Filter: k.filter(r), OrderBy: k.DateField + " asc,Id asc", Top: l.pageSize, Count: count})
	if err != nil {
		return nil, 0, err
	}
	items := make([]Item, 0, len(page.Value))
	prev := r.After
	for _, raw := range page.Value {
		it, err := k.item(raw)
		if err != nil {
			return nil, 0, err
		}
		if prev.ID != "" && (it.Date.Before(prev.Date) || it.Date.Equal(prev.Date) && it.ID <= prev.ID) {
			return nil, 0, fmt.Errorf("%w: %s %s after %s %s", ErrNoProgress, it.Date.Format(ODataTime), it.ID, prev.Date.Format(ODataTime), prev.ID)
		}
		prev = Cursor{it.Date, it.ID}
		items = append(items, it)
	}
	return items, page.Count, nil
}

// PageSize is the number of products asked for per request.
func (l *Lister) PageSize() int { return l.pageSize }

func (k Kind) item(raw json.RawMessage) (Item, error) {
	var p struct {
		ID               string `json:"Id"`
		Name             string `json:"Name"`
		PublicationDate  string `json:"PublicationDate"`
		ModificationDate string `json:"ModificationDate"`
		DeletionDate     string `json:"DeletionDate"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return Item{}, fmt.Errorf("listed product: %w", err)
	}
	it := Item{Raw: raw, ID: strings.ToLower(p.ID), Name: p.Name}
	it.Published, _ = notification.ParseTime(p.PublicationDate)
	it.Modified, _ = notification.ParseTime(p.ModificationDate)
	date := map[string]string{"PublicationDate": p.PublicationDate, "ModificationDate": p.ModificationDate, "DeletionDate": p.DeletionDate}[k.DateField]
	var ok bool
	if it.Date, ok = notification.ParseTime(date); !ok || it.ID == "" {
		// Without its date and Id the listing cannot continue after it.
		return Item{}, fmt.Errorf("listed product %q has no valid Id and %s (%q)", p.ID, k.DateField, date)
	}
	return it, nil
}
