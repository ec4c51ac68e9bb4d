package catalogclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
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

// Cursor is a place in a listing of one kind: past every product whose
// date is before Date, and past the products at Date whose ids are in IDs
// (the catalogue orders a tie by Id, so these are the first of the tie); or,
// with Past, past every product at Date. The zero Cursor is the start.
type Cursor struct {
	Date time.Time `json:"date"`
	IDs  []string  `json:"ids,omitempty"`
	Past bool      `json:"past,omitempty"`
}

// advance moves c past items, which follow it in listing order.
func (c Cursor) advance(items []Item) Cursor {
	for _, it := range items {
		if it.Date.Equal(c.Date) && !c.Past {
			c.IDs = append(slices.Clone(c.IDs), it.ID)
			continue
		}
		c = Cursor{Date: it.Date, IDs: []string{it.ID}}
	}
	return c
}

// seen says whether it is one of the products c is past.
func (c Cursor) seen(it Item) bool {
	switch {
	case c.Date.IsZero():
		return false
	case it.Date.Before(c.Date):
		return true
	case it.Date.Equal(c.Date):
		return c.Past || slices.Contains(c.IDs, it.ID)
	}
	return false
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

// MaxSkip is the catalogue's largest $skip (since 12 November 2024; 422
// beyond): the longest tie a listing can walk.
const MaxSkip = 10000

// Range is what one listing covers: the kind's date from From (inclusive)
// up to Until (exclusive; zero for no end), continuing after After.
type Range struct {
	Filter string // the user's OData filter, "" for none
	From   time.Time
	Until  time.Time
	After  Cursor
}

// filter is the $filter of one request: the kind's date compared with a
// date (op ge, gt or eq), the range's end, and the user's filter. Only
// forms the catalogue documents: date comparisons, never an Id comparison
// (the documentation shows Id only in lookups).
func (k Kind) filter(r Range, op string, at time.Time) string {
	d := k.DateField
	parts := []string{d + " " + op + " " + at.UTC().Format(ODataTime)}
	if !r.Until.IsZero() && op != "eq" {
		parts = append(parts, d+" lt "+r.Until.UTC().Format(ODataTime))
	}
	if strings.TrimSpace(r.Filter) != "" {
		parts = append(parts, "("+r.Filter+")")
	}
	return strings.Join(parts, " and ")
}

// Lister reads one page of a kind's listing at a time, within a request
// rate, with the forms the catalogue's OData documentation gives and
// nothing else: one $orderby property (the kind's date, asc: "if orderby
// option is used, additional orderby by id is also used, so that the
// results are fully ordered"), date comparisons in $filter, $top up to
// 1000, $skip only to walk a tie.
//
// It continues after the last product by date: the next page asks for
// <date> ge <last date> and leaves out the products at that date it has
// already listed (they come first: the tie is ordered by Id). A tie longer
// than a page is walked with $skip inside <date> eq <that date>, then the
// listing goes on with <date> gt it. It never follows @odata.nextLink (the
// catalogue drops it past $skip 10 000); a tie of more than MaxSkip
// products at one instant cannot be walked (ErrTieTooLarge).
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

// Errors of a listing that cannot go on.
var (
	// ErrNoProgress: the catalogue answered a page that does not continue
	// the listing (out of order, outside the filter, or nothing new where a
	// full page was): going on could loop or skip.
	ErrNoProgress = errors.New("listing did not advance")
	// ErrTieTooLarge: more products share one date than $skip can walk.
	ErrTieTooLarge = errors.New("more products share one date than the catalogue's $skip limit (10 000) lets a listing walk")
)

// Listed is one page of a listing.
type Listed struct {
	// Items are the products not listed before, in listing order.
	Items []Item
	// Next is where the listing continues.
	Next Cursor
	// Done says nothing follows Next.
	Done bool
	// Total is, when asked for, the number of matches of the page's query
	// ($count: from the cursor on), else -1.
	Total int64
}

// Page returns the next page of k within r. It sends one request, or two
// when a tie ends exactly at a page's end.
func (l *Lister) Page(ctx context.Context, k Kind, r Range, count bool) (Listed, error) {
	c := r.After
	n := l.pageSize
	var (
		raw   []Item
		total int64
		err   error
	)
	switch {
	case c.Date.IsZero():
		raw, total, err = l.request(ctx, k, k.filter(r, "ge", r.From), 0, count)
	case c.Past:
		raw, total, err = l.request(ctx, k, k.filter(r, "gt", c.Date), 0, count)
	case len(c.IDs) < n:
		raw, total, err = l.request(ctx, k, k.filter(r, "ge", c.Date), 0, count)
	default:
		// The tie at c.Date fills pages: walk it, then go past it.
		if len(c.IDs) > MaxSkip {
			return Listed{}, fmt.Errorf("%w (%s %s)", ErrTieTooLarge, k.DateField, c.Date.UTC().Format(ODataTime))
		}
		raw, _, err = l.request(ctx, k, k.filter(r, "eq", c.Date), len(c.IDs), false)
		if err != nil {
			return Listed{}, err
		}
		for _, it := range raw {
			if !it.Date.Equal(c.Date) {
				return Listed{}, fmt.Errorf("%w: %s %s in the listing of the products at %s", ErrNoProgress, it.ID, it.Date.Format(ODataTime), c.Date.Format(ODataTime))
			}
		}
		out := Listed{Items: fresh(c, raw), Total: -1}
		out.Next = c.advance(out.Items)
		if len(raw) < n {
			// The tie is done: the next page starts past it.
			out.Next = Cursor{Date: c.Date, Past: true}
		} else if len(out.Items) == 0 {
			return Listed{}, fmt.Errorf("%w: a full page of products at %s already listed", ErrNoProgress, c.Date.Format(ODataTime))
		}
		return out, nil
	}
	if err != nil {
		return Listed{}, err
	}
	for i, it := range raw {
		// The catalogue's order (date, then Id), and nothing before the
		// cursor: anything else and going on could loop or skip.
		switch {
		case i > 0 && (it.Date.Before(raw[i-1].Date) || it.Date.Equal(raw[i-1].Date) && it.ID < raw[i-1].ID):
			return Listed{}, fmt.Errorf("%w: %s %s out of order after %s %s", ErrNoProgress, it.ID, it.Date.Format(ODataTime), raw[i-1].ID, raw[i-1].Date.Format(ODataTime))
		case !c.Date.IsZero() && it.Date.Before(c.Date), c.Past && !it.Date.After(c.Date):
			return Listed{}, fmt.Errorf("%w: %s %s is not after %s", ErrNoProgress, it.ID, it.Date.Format(ODataTime), c.Date.Format(ODataTime))
		}
	}
	out := Listed{Items: fresh(c, raw), Total: total, Done: len(raw) < n}
	out.Next = c.advance(out.Items)
	if !out.Done && len(out.Items) == 0 {
		return Listed{}, fmt.Errorf("%w: a full page of products already listed", ErrNoProgress)
	}
	return out, nil
}

// fresh are the items of raw that c is not past yet.
func fresh(c Cursor, raw []Item) []Item {
	out := make([]Item, 0, len(raw))
	for _, it := range raw {
		if !c.seen(it) {
			out = append(out, it)
		}
	}
	return out
}

// request sends one listing request: filter, the kind's date ascending,
// a page of products from skip.
func (l *Lister) request(ctx context.Context, k Kind, filter string, skip int, count bool) ([]Item, int64, error) {
	if err := l.limit.Wait(ctx); err != nil {
		return nil, 0, err
	}
	page, err := l.cat.List(ctx, Query{EntitySet: k.EntitySet, Filter: filter, OrderBy: k.DateField + " asc", Top: l.pageSize, Skip: skip, Count: count})
	if err != nil {
		return nil, 0, err
	}
	items := make([]Item, 0, len(page.Value))
	for _, raw := range page.Value {
		it, err := k.item(raw)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, it)
	}
	return items, page.Count, nil
}

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
