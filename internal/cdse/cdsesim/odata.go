package cdsesim

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
)

type subscription struct {
	owner                  string
	ID                     string
	SubscriptionType       string
	Status                 string
	FilterParam            string
	SubscriptionEvent      []string
	StageOrder             bool
	Priority               int
	NotificationEndpoint   string
	NotificationEpUsername string
	NotificationEpPassword string
	SubmissionDate         time.Time
	LastNotificationDate   time.Time

	filter  *productfilter.Filter
	queue   []queued
	nextAck int64
}

type queued struct {
	seq  int64
	at   time.Time
	note notificationJSON
}

// entity is the subscription as the API returns it: never the password.
func (sub *subscription) entity() map[string]any {
	e := map[string]any{
		"@odata.context":    "$metadata#OData.CSC.Subscription",
		"Id":                sub.ID,
		"SubscriptionType":  sub.SubscriptionType,
		"Status":            sub.Status,
		"FilterParam":       sub.FilterParam,
		"SubscriptionEvent": sub.SubscriptionEvent,
		"StageOrder":        sub.StageOrder,
		"Priority":          sub.Priority,
		"SubmissionDate":    fmtTime(sub.SubmissionDate),
	}
	if !sub.LastNotificationDate.IsZero() {
		e["LastNotificationDate"] = fmtTime(sub.LastNotificationDate)
	} else {
		e["LastNotificationDate"] = nil
	}
	if sub.SubscriptionType == "push" {
		e["NotificationEndpoint"] = sub.NotificationEndpoint
		e["NotificationEpUsername"] = sub.NotificationEpUsername
	}
	return e
}

func (s *Sim) handleOData(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/odata/v1/Products"); ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if id, sub, ok := parseKey(rest); ok && sub == "$value" {
			s.handleValue(w, r, id, nil) // checks the token itself, after a redirect
			return
		} else if ok && (sub == "Nodes" || strings.HasPrefix(sub, "Nodes(")) {
			s.handleNodes(w, r, id, sub) // listings need no token (nodes.go)
			return
		}
	}
	user := s.authenticate(r)
	if user == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/odata/v1/")
	switch {
	case path == "Subscriptions" && r.Method == http.MethodPost:
		s.createSubscription(w, r, user)
	case path == "Subscriptions/Info" && r.Method == http.MethodGet:
		s.listSubscriptions(w, user)
	case strings.HasPrefix(path, "Subscriptions("):
		id, rest, ok := parseKey(strings.TrimPrefix(path, "Subscriptions"))
		if !ok {
			notFound(w, "Not Found")
			return
		}
		s.subscriptionOp(w, r, user, id, rest)
	case path == "Products" && r.Method == http.MethodGet:
		s.listEntities(w, r, false)
	case path == "DeletedProducts" && r.Method == http.MethodGet:
		s.listEntities(w, r, true)
	case strings.HasPrefix(path, "Products(") && r.Method == http.MethodGet:
		id, rest, ok := parseKey(strings.TrimPrefix(path, "Products"))
		if !ok || rest != "" {
			notFound(w, "Not Found")
			return
		}
		if p, ok := s.liveProduct(w, id); ok {
			writeJSON(w, http.StatusOK, p.Entity())
		}
	default:
		notFound(w, "Not Found")
	}
}

// liveProduct returns product id, or answers 404 when it is unknown or
// deleted.
func (s *Sim) liveProduct(w http.ResponseWriter, id string) (*Product, bool) {
	s.mu.Lock()
	p, found := s.products[id]
	s.mu.Unlock()
	if !found || !p.DeletionDate.IsZero() {
		notFound(w, "Product "+id+" not found")
		return nil, false
	}
	return p, true
}

// parseKey splits "(<id>)/Rest" into id and "Rest".
func parseKey(s string) (id, rest string, ok bool) {
	if !strings.HasPrefix(s, "(") {
		return "", "", false
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return "", "", false
	}
	id = strings.Trim(s[1:end], "'")
	return id, strings.TrimPrefix(s[end+1:], "/"), true
}

type subscriptionRequest struct {
	SubscriptionType       *string   `json:"SubscriptionType"`
	Status                 *string   `json:"Status"`
	FilterParam            *string   `json:"FilterParam"`
	SubscriptionEvent      *[]string `json:"SubscriptionEvent"`
	StageOrder             *bool     `json:"StageOrder"`
	Priority               *int      `json:"Priority"`
	NotificationEndpoint   *string   `json:"NotificationEndpoint"`
	NotificationEpUsername *string   `json:"NotificationEpUsername"`
	NotificationEpPassword *string   `json:"NotificationEpPassword"`
}

func decodeRequest(w http.ResponseWriter, r *http.Request) (*subscriptionRequest, bool) {
	var req subscriptionRequest
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		unprocessable(w, []string{"body"}, "JSON decode error", string(body))
		return nil, false
	}
	return &req, true
}

func validEvents(ev []string) bool {
	switch strings.Join(ev, ",") {
	case "created", "modified", "created,modified", "modified,created", "deleted":
		return true
	}
	return false
}

// counts returns the user's running and total (running + paused) subscriptions.
func (s *Sim) counts(user string) (running, total int) {
	for _, sub := range s.subs {
		if sub.owner != user {
			continue
		}
		total++
		if sub.Status == "running" {
			running++
		}
	}
	return running, total
}

func (s *Sim) createSubscription(w http.ResponseWriter, r *http.Request, user string) {
	req, ok := decodeRequest(w, r)
	if !ok {
		return
	}
	sub := &subscription{owner: user, ID: uuid.NewString(), Status: "running", SubscriptionEvent: []string{"created"}, Priority: 1, SubmissionDate: s.o.Now()}
	switch {
	case req.SubscriptionType == nil:
		unprocessable(w, []string{"body", "SubscriptionType"}, "Field required", nil)
		return
	case *req.SubscriptionType != "push" && *req.SubscriptionType != "pull":
		unprocessable(w, []string{"body", "SubscriptionType"}, "Input should be 'push' or 'pull'", *req.SubscriptionType)
		return
	}
	sub.SubscriptionType = *req.SubscriptionType
	if req.Status != nil {
		if *req.Status != "running" && *req.Status != "paused" {
			unprocessable(w, []string{"body", "Status"}, "Input should be 'running' or 'paused'", *req.Status)
			return
		}
		sub.Status = *req.Status
	}
	if req.SubscriptionEvent != nil {
		if !validEvents(*req.SubscriptionEvent) {
			unprocessable(w, []string{"body", "SubscriptionEvent"}, "Input should be ['created'], ['modified'], ['created', 'modified'] or ['deleted']", *req.SubscriptionEvent)
			return
		}
		sub.SubscriptionEvent = *req.SubscriptionEvent
	}
	if req.Priority != nil && *req.Priority != 1 {
		unprocessable(w, []string{"body", "Priority"}, "Priority is fixed to 1", *req.Priority)
		return
	}
	if req.StageOrder != nil {
		sub.StageOrder = *req.StageOrder
	}
	if req.FilterParam != nil {
		sub.FilterParam = *req.FilterParam
	}
	f, err := productfilter.Parse(sub.FilterParam)
	if err != nil {
		badRequest(w, "Invalid FilterParam: "+err.Error())
		return
	}
	sub.filter = f
	if sub.SubscriptionType == "push" {
		if req.NotificationEndpoint == nil || *req.NotificationEndpoint == "" {
			unprocessable(w, []string{"body", "NotificationEndpoint"}, "NotificationEndpoint is required for push subscriptions", nil)
			return
		}
		if u, err := url.Parse(*req.NotificationEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			unprocessable(w, []string{"body", "NotificationEndpoint"}, "Input should be a valid URL", *req.NotificationEndpoint)
			return
		}
		sub.NotificationEndpoint = *req.NotificationEndpoint
		if req.NotificationEpUsername != nil {
			sub.NotificationEpUsername = *req.NotificationEpUsername
		}
		if req.NotificationEpPassword != nil {
			sub.NotificationEpPassword = *req.NotificationEpPassword
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	running, total := s.counts(user)
	if total >= s.o.MaxTotal {
		badRequest(w, fmt.Sprintf("Maximum number of subscriptions (%d) reached", s.o.MaxTotal))
		return
	}
	if sub.Status == "running" && running >= s.o.MaxRunning {
		badRequest(w, fmt.Sprintf("Maximum number of running subscriptions (%d) reached", s.o.MaxRunning))
		return
	}
	s.subs[sub.ID] = sub
	writeJSON(w, http.StatusCreated, sub.entity())
}

func (s *Sim) listSubscriptions(w http.ResponseWriter, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, sub := range s.sortedSubs() {
		if sub.owner == user {
			out = append(out, sub.entity())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Sim) subscriptionOp(w http.ResponseWriter, r *http.Request, user, id, rest string) {
	s.mu.Lock()
	sub, ok := s.subs[id]
	s.mu.Unlock()
	if !ok || sub.owner != user {
		notFound(w, "Subscription "+id+" not found")
		return
	}
	switch {
	case rest == "" && r.Method == http.MethodGet:
		s.mu.Lock()
		e := sub.entity()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, e)
	case rest == "" && r.Method == http.MethodPatch:
		s.updateSubscription(w, r, user, sub)
	case rest == "" && r.Method == http.MethodDelete:
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case rest == "Read" && r.Method == http.MethodGet:
		s.read(w, r, sub)
	case rest == "Ack" && r.Method == http.MethodPost:
		s.ack(w, r, sub)
	default:
		notFound(w, "Not Found")
	}
}

func (s *Sim) updateSubscription(w http.ResponseWriter, r *http.Request, user string, sub *subscription) {
	req, ok := decodeRequest(w, r)
	if !ok {
		return
	}
	if sub.SubscriptionType == "pull" && (req.NotificationEndpoint != nil || req.NotificationEpUsername != nil || req.NotificationEpPassword != nil || req.FilterParam != nil || req.SubscriptionEvent != nil) {
		unprocessable(w, []string{"body"}, "Only Status can be changed on a pull subscription", nil)
		return
	}
	if req.FilterParam != nil || req.SubscriptionEvent != nil || req.SubscriptionType != nil || req.Priority != nil {
		unprocessable(w, []string{"body"}, "Only Status, NotificationEndpoint, NotificationEpUsername and NotificationEpPassword can be changed", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Status != nil {
		switch *req.Status {
		case "cancelled":
			delete(s.subs, sub.ID)
			e := sub.entity()
			e["Status"] = "cancelled"
			writeJSON(w, http.StatusOK, e)
			return
		case "running":
			if running, _ := s.counts(user); sub.Status != "running" && running >= s.o.MaxRunning {
				badRequest(w, fmt.Sprintf("Maximum number of running subscriptions (%d) reached", s.o.MaxRunning))
				return
			}
		case "paused":
		default:
			unprocessable(w, []string{"body", "Status"}, "Input should be 'running', 'paused' or 'cancelled'", *req.Status)
			return
		}
		sub.Status = *req.Status
	}
	if req.NotificationEndpoint != nil {
		sub.NotificationEndpoint = *req.NotificationEndpoint
	}
	if req.NotificationEpUsername != nil {
		sub.NotificationEpUsername = *req.NotificationEpUsername
	}
	if req.NotificationEpPassword != nil {
		sub.NotificationEpPassword = *req.NotificationEpPassword
	}
	writeJSON(w, http.StatusOK, sub.entity())
}

// enqueue adds a notification to a PULL queue, dropping the oldest beyond
// the cap. Called with s.mu held.
func (s *Sim) enqueue(sub *subscription, n notificationJSON, now time.Time) {
	sub.nextAck++
	n.AckID = ackID(sub.nextAck)
	sub.queue = append(sub.queue, queued{seq: sub.nextAck, at: now, note: n})
	if over := len(sub.queue) - s.o.QueueCap; over > 0 {
		sub.queue = slices.Delete(sub.queue, 0, over)
		s.stats.queueDropped.Add(int64(over))
	}
}

func ackID(seq int64) string { return "AQ" + strconv.FormatInt(seq, 36) }

func parseAckID(s string) (int64, bool) {
	if !strings.HasPrefix(s, "AQ") {
		return 0, false
	}
	n, err := strconv.ParseInt(s[2:], 36, 64)
	return n, err == nil
}

func (s *Sim) read(w http.ResponseWriter, r *http.Request, sub *subscription) {
	if sub.SubscriptionType != "pull" {
		badRequest(w, "Read is for pull subscriptions")
		return
	}
	top := 1
	if v := r.URL.Query().Get("$top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 20 {
			unprocessable(w, []string{"query", "$top"}, "Input should be between 1 and 20", v)
			return
		}
		top = n
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []notificationJSON{}
	for _, q := range sub.queue[:min(top, len(sub.queue))] {
		n := q.note
		if now.Sub(q.at) > s.o.Retention {
			// After the retention only the short form is kept.
			n.ProductName, n.Value = "", nil
		}
		out = append(out, n)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Sim) ack(w http.ResponseWriter, r *http.Request, sub *subscription) {
	if sub.SubscriptionType != "pull" {
		badRequest(w, "Ack is for pull subscriptions")
		return
	}
	seq, ok := parseAckID(r.URL.Query().Get("$ackid"))
	if !ok {
		badRequest(w, "Invalid $ackid")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(sub.queue) && sub.queue[n].seq <= seq {
		n++
	}
	sub.queue = slices.Delete(sub.queue, 0, n)
	sub.LastNotificationDate = s.o.Now()
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.context": "$metadata#OData.CSC.QueueStatus", "AckMessagesNum": n,
		"CurrentQueueLength": len(sub.queue), "MaxQueueLength": s.o.QueueCap,
	})
}

// maxSkip is the catalogue's largest $skip (since 12 November 2024): a
// larger one is answered 422, and @odata.nextLink is left out when the next
// page would need one.
const maxSkip = 10000

// listEntities serves GET /Products (live products) and GET
// /DeletedProducts (deleted ones) exactly as strictly as the catalogue's
// OData documentation allows, so that a client relying on anything
// undocumented fails here first: $filter through the receiver's own
// evaluator (internal/cdse/productfilter: what it cannot parse is a 400 naming
// the position, never ignored; Id only with eq); $orderby one documented
// property (Products: ContentDate/Start, ContentDate/End, PublicationDate,
// ModificationDate; DeletedProducts: ContentDate/Start, ContentDate/End,
// DeletionDate), asc or desc, and "an additional orderby by id" so the
// results are fully ordered — a second key is a 400; without $orderby the
// results are not ordered (here: in the order the products were made);
// $top 0..1000 (default 20) and $skip 0..10 000, 422 beyond as the
// catalogue's validation errors; $count; @odata.nextLink.
func (s *Sim) listEntities(w http.ResponseWriter, r *http.Request, deleted bool) {
	q := r.URL.Query()
	f, err := productfilter.Parse(q.Get("$filter"))
	if err != nil {
		badRequest(w, "Invalid filter: "+err.Error())
		return
	}
	top, ok := boundedInt(w, q, "$top", 20, 1000)
	if !ok {
		return
	}
	skip, ok := boundedInt(w, q, "$skip", 0, maxSkip)
	if !ok {
		return
	}
	order, reason := parseOrderBy(q.Get("$orderby"), deleted)
	if reason != "" {
		badRequest(w, "Invalid $orderby "+strconv.Quote(q.Get("$orderby"))+": "+reason)
		return
	}
	if c := q.Get("$count"); c != "" && !slices.Contains([]string{"True", "true", "1", "False", "false", "0"}, c) {
		unprocessableAs(w, "bool_parsing", []string{"query", "$count"}, "Input should be a valid boolean", c, nil)
		return
	}
	s.mu.Lock()
	var match []*Product
	for _, id := range s.order {
		if p := s.products[id]; p.DeletionDate.IsZero() != deleted && p.matches(f) {
			match = append(match, p)
		}
	}
	s.mu.Unlock()
	if order != nil {
		slices.SortStableFunc(match, order)
	}
	page := match[min(skip, len(match)):min(skip+top, len(match))]
	values := make([]map[string]any, len(page))
	for i, p := range page {
		values[i] = p.Entity()
	}
	set := "Products"
	if deleted {
		set = "DeletedProducts"
	}
	resp := map[string]any{"@odata.context": "$metadata#" + set + "(Attributes())", "value": values}
	if c := q.Get("$count"); c == "True" || c == "true" || c == "1" {
		resp["@odata.count"] = len(match)
	}
	if skip+top < len(match) && skip+top <= maxSkip {
		next := *r.URL
		nq := next.Query()
		nq.Set("$skip", strconv.Itoa(skip+top))
		next.RawQuery = nq.Encode()
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		resp["@odata.nextLink"] = scheme + "://" + r.Host + next.RequestURI()
	}
	writeJSON(w, http.StatusOK, resp)
}

// boundedInt reads the integer query option name (default def), between 0
// and max; out of range or not a number is the catalogue's 422.
func boundedInt(w http.ResponseWriter, q url.Values, name string, def, max int) (int, bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		unprocessableAs(w, "int_parsing", []string{"query", name}, "Input should be a valid integer, unable to parse string as an integer", v, nil)
	case n < 0:
		unprocessableAs(w, "greater_than_equal", []string{"query", name}, "Input should be greater than or equal to 0", v, map[string]int{"ge": 0})
	case n > max:
		unprocessableAs(w, "less_than_equal", []string{"query", name}, "Input should be less than or equal to "+strconv.Itoa(max), v, map[string]int{"le": max})
	default:
		return n, true
	}
	return 0, false
}

// unprocessableAs writes one validation error as the catalogue's 422 body
// ({"detail":[{"type","loc","msg","input","ctx"}]}, the $skip one
// documented).
func unprocessableAs(w http.ResponseWriter, typ string, loc []string, msg, input string, ctx any) {
	e := map[string]any{"type": typ, "loc": loc, "msg": msg, "input": input}
	if ctx != nil {
		e["ctx"] = ctx
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{e}})
}

// orderable are the documented $orderby properties of each entity set.
var orderable = map[bool]map[string]func(*Product) time.Time{
	false: {
		"ContentDate/Start": func(p *Product) time.Time { return p.ContentStart },
		"ContentDate/End":   func(p *Product) time.Time { return p.ContentEnd },
		"PublicationDate":   func(p *Product) time.Time { return p.PublicationDate },
		"ModificationDate":  func(p *Product) time.Time { return p.ModificationDate },
	},
	true: {
		"ContentDate/Start": func(p *Product) time.Time { return p.ContentStart },
		"ContentDate/End":   func(p *Product) time.Time { return p.ContentEnd },
		"DeletionDate":      func(p *Product) time.Time { return p.DeletionDate },
	},
}

// parseOrderBy reads "<property> [asc|desc]": one documented property; the
// order then continues by Id, as the catalogue documents. It returns nil
// for no $orderby (no order) and the reason when it refuses one.
func parseOrderBy(ob string, deleted bool) (func(a, b *Product) int, string) {
	if strings.TrimSpace(ob) == "" {
		return nil, ""
	}
	if strings.Contains(ob, ",") {
		return nil, "one property only (the catalogue adds the order by Id itself)"
	}
	fields := strings.Fields(ob)
	date, ok := orderable[deleted][fields[0]]
	if !ok {
		props := slices.Sorted(maps.Keys(orderable[deleted]))
		return nil, fmt.Sprintf("%q cannot be ordered by; one of %s", fields[0], strings.Join(props, ", "))
	}
	desc := false
	switch {
	case len(fields) == 1, len(fields) == 2 && fields[1] == "asc":
	case len(fields) == 2 && fields[1] == "desc":
		desc = true
	default:
		return nil, "the direction is asc or desc"
	}
	return func(a, b *Product) int {
		c := date(a).Compare(date(b))
		if desc {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		return c
	}, ""
}
