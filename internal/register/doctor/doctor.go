// Package doctor is `register doctor`: does the live catalogue (and the
// download service) still answer every request form the receiver, register
// and the fetcher rely on, sent through their own code?
package doctor

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/register"
)

// DoctorOptions say what `register doctor` lists: the filter (the
// receiver's RECONCILE_FILTER, or the one given) over a narrow window ending
// now, a few products a page.
type DoctorOptions struct {
	Filter   string
	Window   time.Duration
	PageSize int
	// DownloadURL is the download service the fetcher uses
	// (CDSE_DOWNLOAD_URL); "" skips its probes.
	DownloadURL string
	// Product is the id of the product whose Nodes the download probes
	// ask for (nodes.go); "" the first one the created listing gives.
	Product string
}

// undocumentedForms are filter forms users paste that the catalogue's
// documentation does not show, which the receiver's evaluator accepts on
// an assumption (docs/interests.md): doctor asks the live catalogue
// whether it accepts them too. Each is listed over the window, one product.
var undocumentedForms = []struct{ check, filter string }{
	{"filter: lower-case names", "contains(name,'S') and attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')"},
	{"filter: lambda value without cast", "Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/Value eq 'S2MSI2A')"},
	{"filter: Footprint= in Intersects", "OData.CSC.Intersects(Footprint=geography'SRID=4326;POINT(12 45)')"},
}

// Probe is one request of the doctor and what came back.
type Probe struct {
	Check    string `json:"check"`
	Request  string `json:"request"` // method, path and query, as sent
	Status   int    `json:"status"`  // 0: no answer
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Cause is, for a failed probe, why in one line: the root of a
	// transport error (connection refused, no such host, a timeout, a
	// certificate) or the catalogue's message.
	Cause string `json:"cause,omitempty"`
	OK    bool   `json:"ok"`
	// Required: a form the receiver relies on, whose failure fails the
	// command. The rest inform (filter forms users paste, the download
	// service's Range) and never fail it, but a download service that
	// does not answer at all.
	Required bool `json:"required"`
}

// DoctorReport is what `register doctor -o json` prints.
type DoctorReport struct {
	OK     bool    `json:"ok"`
	Probes []Probe `json:"probes"`
}

// recorder is an http.RoundTripper that notes every request and its status:
// the doctor reports exactly what the receiver's own code sent.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []sent
}

type sent struct {
	request string
	status  int
	err     error
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	s := sent{request: req.Method + " " + req.URL.EscapedPath(), err: err}
	if q := req.URL.RawQuery; q != "" {
		if u, perr := url.QueryUnescape(q); perr == nil {
			q = u
		}
		s.request += "?" + q
	}
	if resp != nil {
		s.status = resp.StatusCode
	}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	r.mu.Unlock()
	return resp, err
}

// take returns the requests sent since the last call.
func (r *recorder) take() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

// Doctor checks that the live catalogue still answers every request form
// the receiver and `register` depend on, read-only: it creates and changes
// nothing. The login and the listings go through the receiver's own code
// (internal/receiver/auth, catalogclient.Lister), so what it sends is what the
// reconciler and the backfill send.
func Doctor(ctx context.Context, getenv func(string) string, o DoctorOptions, now time.Time) (DoctorReport, error) {
	s, err := register.NewSession(getenv)
	if err != nil {
		return DoctorReport{}, err
	}
	cfg := s.Config()
	rec := &recorder{next: http.DefaultTransport}
	hc := &http.Client{Transport: rec, Timeout: 60 * time.Second}
	login := cdselogin.FromSettings(cfg.Login)
	login.HTTPClient = hc
	tokens := cdselogin.NewPasswordSource(login)
	api := catalogclient.New(cfg.CDSECatalogueURL, tokens, hc)
	api.MaxAttempts = 1 // a probe reports what one request got
	var r DoctorReport
	// probe runs f and turns each request it sent into a row.
	probe := func(check, expected string, f func() (got string, err error)) bool {
		got, err := f()
		reqs := rec.take()
		ok := err == nil
		if err != nil {
			got = err.Error()
		}
		if len(reqs) == 0 {
			r.Probes = append(r.Probes, Probe{Check: check, Expected: expected, Got: got, Cause: cause(err), OK: ok, Required: true})
			return ok
		}
		for i, q := range reqs {
			p := Probe{Check: check, Request: q.request, Status: q.status, Expected: expected, OK: q.err == nil && q.status/100 == 2, Required: true}
			if q.err != nil {
				p.Cause = cause(q.err)
			}
			if i == len(reqs)-1 {
				p.OK, p.Got = p.OK && ok, got
				if !p.OK && p.Cause == "" {
					p.Cause = cause(err)
				}
			}
			r.Probes = append(r.Probes, p)
		}
		return ok
	}
	loggedIn := probe("login", "200, an access and a refresh token (password grant)", func() (string, error) {
		_, err := tokens.Token(ctx)
		return "logged in as " + cfg.CDSEUsername, err
	})
	if !loggedIn {
		return r.done(), nil
	}
	probe("refresh", "200, a new access token (refresh grant)", func() (string, error) {
		return "refreshed", tokens.Refresh(ctx)
	})
	var subs []catalogclient.Subscription
	probe("list subscriptions", "200, a JSON array", func() (string, error) {
		var err error
		subs, err = api.ListSubscriptions(ctx)
		return fmt.Sprintf("%d subscription(s)", len(subs)), err
	})
	if len(subs) > 0 {
		probe("get a subscription", "200, the entity", func() (string, error) {
			sub, err := api.GetSubscription(ctx, subs[0].ID)
			if err == nil && sub.ID != subs[0].ID {
				err = fmt.Errorf("asked for %s, got %q", subs[0].ID, sub.ID)
			}
			return "Id " + subs[0].ID + ", " + subs[0].SubscriptionType + ", " + subs[0].Status, err
		})
	} else {
		r.Probes = append(r.Probes, Probe{Check: "get a subscription", Expected: "200, the entity", Got: "not checked: the account has no subscription", OK: true})
	}
	for _, sub := range subs {
		if sub.SubscriptionType != "pull" {
			continue
		}
		// Read is not Ack: it leaves the queue as it is.
		probe("PULL read", "200, an array of notifications (SubscriptionEvent, ProductId, AckId)", func() (string, error) {
			raws, err := api.Read(ctx, sub.ID, 1)
			if err != nil {
				return "", err
			}
			for _, raw := range raws {
				var n struct{ SubscriptionEvent, ProductId, AckId string }
				if err := json.Unmarshal(raw, &n); err != nil || n.SubscriptionEvent == "" || n.ProductId == "" || n.AckId == "" {
					return "", fmt.Errorf("a notification without SubscriptionEvent, ProductId or AckId: %.200s", raw)
				}
			}
			return fmt.Sprintf("%d notification(s) of %s, not acknowledged", len(raws), sub.ID), nil
		})
		break
	}
	// The listings, as the reconciler and the backfill send them.
	rng := catalogclient.Range{Filter: o.Filter, From: now.Add(-o.Window), Until: now}
	var someProduct string // one listed, for the download probe
	for _, ev := range event.Kinds {
		k := catalogclient.KindOf(ev)
		l := catalogclient.NewLister(api, o.PageSize, 1000)
		var first catalogclient.Listed
		listed := probe(string(ev)+": first page", "200, the products of the window in "+k.DateField+" order, Id breaking ties; @odata.count", func() (string, error) {
			var err error
			if first, err = l.Page(ctx, k, rng, true); err != nil {
				return "", err
			}
			if first.Total < 0 {
				return "", fmt.Errorf("no @odata.count in the answer to $count=True")
			}
			return fmt.Sprintf("%d listed of %d (%s)", len(first.Items), first.Total, k.EntitySet), nil
		})
		if listed && len(first.Items) > 0 && someProduct == "" && ev == event.Created {
			someProduct = first.Items[0].ID
		}
		if !listed || len(first.Items) == 0 {
			if listed {
				r.Probes = append(r.Probes, Probe{Check: string(ev) + ": next page, a tie", Expected: "a page after the last date", Got: "not checked: nothing listed in the window (widen --window)", OK: true})
			}
			continue
		}
		probe(string(ev)+": next page", "200, what follows the last product listed ("+k.DateField+" ge it, the ones listed left out)", func() (string, error) {
			next := rng
			next.After = first.Next
			p, err := l.Page(ctx, k, next, false)
			return fmt.Sprintf("%d more", len(p.Items)), err
		})
		// A tie longer than a page is walked with $skip inside one date:
		// the same request, with a page of one.
		probe(string(ev)+": a tie", "200, the products at one "+k.DateField+" after the first ($skip inside "+k.DateField+" eq)", func() (string, error) {
			it := first.Items[0]
			tie := rng
			tie.After = catalogclient.Cursor{Date: it.Date, IDs: []string{it.ID}}
			p, err := catalogclient.NewLister(api, 1, 1000).Page(ctx, k, tie, false)
			return fmt.Sprintf("%d more at %s", len(p.Items), it.Date.UTC().Format(catalogclient.ODataTime)), err
		})
	}
	// What the receiver does not rely on but users' filters and the
	// fetcher do: informative rows, which never fail the command.
	for _, form := range undocumentedForms {
		probe(form.check, "200: the catalogue accepts it as the receiver's interests do", func() (string, error) {
			p, err := catalogclient.NewLister(api, 1, 1000).Page(ctx, catalogclient.KindOf(event.Created), catalogclient.Range{Filter: form.filter, From: rng.From, Until: rng.Until}, false)
			return fmt.Sprintf("accepted (%d listed)", len(p.Items)), err
		})
		r.Probes[len(r.Probes)-1].Required = false
	}
	if o.Product != "" {
		someProduct = o.Product
	}
	if o.DownloadURL != "" && len(someProduct) > 0 {
		answered := true
		probe("download: Range", "206 with Content-Range (a cut download resumes) or 200 (it starts over): both handled", func() (string, error) {
			tok, err := tokens.Token(ctx)
			if err != nil {
				return "", err
			}
			status, detail, err := fetch.RangeSupport(ctx, hc, o.DownloadURL, tok.Type()+" "+tok.AccessToken, someProduct)
			answered = status != 0
			return detail, err
		})
		// What it answers about Range informs; no answer at all (DNS,
		// TCP, TLS) fails every fetch, and the command.
		last := &r.Probes[len(r.Probes)-1]
		last.Required = !answered
		if !answered {
			last.Check = "download: reachable"
			last.Expected = "an HTTP answer from the download service (CDSE_DOWNLOAD_URL, --download-url)"
		}
		if answered {
			// What it answers informs: the rows of one check never fail
			// the command, and a check that holds is OK whatever the
			// status of its request (a 403 may be the answer expected).
			informative := func(check, expected string, f func() (string, error)) bool {
				n := len(r.Probes)
				ok := probe(check, expected, f)
				for i := n; i < len(r.Probes); i++ {
					r.Probes[i].Required = false
				}
				if ok {
					r.Probes[len(r.Probes)-1].OK = true
				}
				return ok
			}
			skip := func(check, why string) {
				r.Probes = append(r.Probes, Probe{Check: check, Got: "not checked: " + why, OK: true})
			}
			auth := func() (string, error) {
				tok, err := tokens.Token(ctx)
				if err != nil {
					return "", err
				}
				return tok.Type() + " " + tok.AccessToken, nil
			}
			nodeChecks(ctx, nodesClient{hc: hc, dl: o.DownloadURL, id: someProduct, tok: auth}, informative, skip)
		}
	}
	return r.done(), nil
}

func (r DoctorReport) done() DoctorReport {
	r.OK = true
	for _, p := range r.Probes {
		if !p.OK && p.Required {
			r.OK = false
		}
	}
	if r.Probes == nil {
		r.Probes = []Probe{}
	}
	return r
}

// PrintDoctor writes the probes as a table: check, request, status,
// expected, got.
func PrintDoctor(w io.Writer, r DoctorReport, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "CHECK\tOK\tSTATUS\tREQUEST\tEXPECTED\tGOT")
	} else {
		fmt.Fprintln(tw, "CHECK\tOK\tSTATUS\tRESULT")
	}
	for _, p := range r.Probes {
		mark := "✔"
		if !p.OK {
			mark = "✘"
		}
		status := "-"
		if p.Status != 0 {
			status = fmt.Sprint(p.Status)
		}
		if wide {
			req := p.Request
			if req == "" {
				req = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Check, mark, status, req, p.Expected, p.Got)
			continue
		}
		// One readable line: what came back, or why it failed.
		result := p.Got
		if !p.OK && p.Cause != "" {
			result = p.Cause
		}
		if result == "" {
			result = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Check, mark, status, oneLine(result, 100))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.OK {
		return nil
	}
	var msg string
	if c, ok := unreachable(r); ok {
		msg = "\nthe catalogue could not be reached: " + c + " (check CDSE_TOKEN_URL, CDSE_CATALOGUE_URL and the network; nothing was sent to it)"
	} else {
		msg = "\nthe catalogue refused a request the receiver relies on: see docs/sources.md, \"What the catalogue documents, and what we assume\""
	}
	if !wide {
		msg += "\n(-o wide: each request as sent, what was expected, what came back)"
	}
	_, err := fmt.Fprintln(w, msg)
	return err
}

// unreachable reports whether no failed probe got an HTTP answer (the
// catalogue was never reached), with the first cause.
func unreachable(r DoctorReport) (string, bool) {
	first := ""
	for _, p := range r.Probes {
		if p.OK {
			continue
		}
		if p.Status != 0 {
			return "", false
		}
		if first == "" {
			first = p.Cause
		}
	}
	return first, first != ""
}

// cause is err's root in one line: the innermost error of a transport
// failure (what an operator acts on: "connection refused", "no such host"),
// else err itself.
func cause(err error) string {
	if err == nil {
		return ""
	}
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	var api *catalogclient.APIError
	switch {
	case errors.As(err, &api):
		return fmt.Sprintf("%d: %s", api.Status, api.Message)
	case errors.As(err, &dns):
		return "no such host " + dns.Name
	case errors.As(err, &cert):
		return "certificate: " + cert.Err.Error()
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "timed out"
	case errors.As(err, &op) && op.Err != nil:
		inner := op.Err
		for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
			inner = u
		}
		return inner.Error()
	}
	return err.Error()
}

// oneLine is s on one line, at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
