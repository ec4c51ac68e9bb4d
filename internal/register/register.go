// Package register is what the operator's command `register` (cmd/register)
// does with the catalogue: a logged-in session on the subscription API
// (internal/receiver/auth, internal/cdse/catalogclient), the receiver's subscription
// created idempotently and within the account's limits, and the status
// report that joins the catalogue's view with the receiver's.
package register

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

// The catalogue's limits. The live documentation (the Subscriptions page):
// "The limit of the running Subscriptions (PUSH and PULL) for one user is
// 1. The overall limit of the Subscriptions (running and paused) for one
// user is 10." The interface description this project started from said 2
// running: --max-running takes another value where an account has it.
const (
	DocumentedMaxRunning = 1
	MaxTotal             = 10
)

// SettingsHelp ends the help of every command.
const SettingsHelp = `Settings come from the environment (never from flags, which show in ps):
  CDSE_USERNAME, CDSE_PASSWORD or CDSE_PASSWORD_FILE, CDSE_TOTP (two-factor
  code), CDSE_CLIENT_ID (default cdse-public), CDSE_TOKEN_URL, CDSE_CATALOGUE_URL;
  for create and apply: RECEIVER_USERNAME, RECEIVER_PASSWORD or
  RECEIVER_PASSWORD_FILE (the Basic-auth credentials the catalogue will send
  to the receiver, which the preflight of create, apply, update and status
  sends first).

Exit codes: 0 ok, 1 error, 2 usage.`

// Session is a login to the catalogue and its subscription API. Nothing
// is sent before a call: --help and completion need no credentials.
type Session struct {
	API    *catalogclient.Client
	tokens *cdselogin.PasswordSource
	cfg    config.Config
}

// NewSession reads the catalogue login (and the receiver's webhook
// credentials, for create) from the environment with the receiver's
// configuration rules: <NAME>_FILE for secrets, values as written.
func NewSession(getenv func(string) string) (*Session, error) {
	cfg, err := config.Load(config.Sources{Getenv: getenv})
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if err := cfg.Login.Required(); err != nil {
		return nil, cli.Usagef("%v%s", err, config.TypoHints(os.Environ()))
	}
	tokens := cdselogin.NewPasswordSource(cdselogin.FromSettings(cfg.Login))
	return &Session{API: catalogclient.New(cfg.CDSECatalogueURL, tokens, nil), tokens: tokens, cfg: cfg}, nil
}

// User is the catalogue account.
func (s *Session) User() string { return s.cfg.CDSEUsername }

// Config is the settings the session was made with (register doctor sends
// its probes with them).
func (s *Session) Config() config.Config { return s.cfg }

// Login checks the login only.
func (s *Session) Login(ctx context.Context) error {
	_, err := s.tokens.Token(ctx)
	return err
}

// CreateOptions are the flags of create.
type CreateOptions struct {
	Endpoint, Filter, Events, Type, Replace, ReplaceAction string
	MaxRunning                                             int
	Resume, Insecure                                       bool
	Preflight                                              PreflightOptions
}

// Create makes the receiver's subscription, or finds the same one already
// there (and resumes it with Resume); what it did is told to log.
func (s *Session) Create(ctx context.Context, o CreateOptions, log io.Writer) (*catalogclient.Subscription, error) {
	if o.ReplaceAction != "pause" && o.ReplaceAction != "cancel" {
		return nil, cli.Usagef("--replace-action must be pause or cancel")
	}
	req, err := o.Request(s.cfg.Username, s.cfg.Password)
	if err != nil {
		return nil, err
	}
	if req.NotificationEndpoint != "" {
		if err := o.Preflight.run(ctx, req.NotificationEndpoint, s.cfg.Username, s.cfg.Password, o.Insecure, log); err != nil {
			return nil, err
		}
	}
	subs, err := s.API.ListSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	// Idempotent: the same subscription already there changes nothing.
	if same := findSame(subs, req); same != nil {
		switch {
		case same.Status == "paused" && o.Resume:
			if running := RunningOf(subs); len(running) >= o.MaxRunning {
				return nil, handLimitError(running, o.MaxRunning)
			}
			if same, err = s.SetStatus(ctx, same.ID, "running"); err != nil {
				return nil, err
			}
			fmt.Fprintf(log, "resumed the existing subscription %s\n", same.ID)
		case same.Status == "paused":
			fmt.Fprintf(log, "the subscription already exists but is paused; run again with --resume to resume it\n")
		default:
			fmt.Fprintf(log, "the subscription already exists; nothing changed\n")
		}
		return same, nil
	}
	if len(subs) >= MaxTotal {
		return nil, fmt.Errorf("the account has %d subscriptions (running and paused), the most allowed; cancel one first (register cancel ID)", len(subs))
	}
	if running := RunningOf(subs); len(running) >= o.MaxRunning {
		if o.Replace == "" {
			return nil, LimitError(running, o.MaxRunning)
		}
		if !slices.ContainsFunc(running, func(s catalogclient.Subscription) bool { return s.ID == o.Replace }) {
			return nil, fmt.Errorf("--replace %s: not one of the running subscriptions", o.Replace)
		}
		verb := "paused"
		if o.ReplaceAction == "cancel" {
			verb = "cancelled"
			err = s.API.DeleteSubscription(ctx, o.Replace)
		} else {
			_, err = s.SetStatus(ctx, o.Replace, "paused")
		}
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "%s subscription %s\n", verb, o.Replace)
	}
	created, err := s.API.CreateSubscription(ctx, req)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "created %s subscription %s: events %s, filter %q\n", created.SubscriptionType, created.ID, strings.Join(created.SubscriptionEvent, ","), created.FilterParam)
	return created, nil
}

// SetStatus pauses ("paused") or resumes ("running") a subscription.
func (s *Session) SetStatus(ctx context.Context, id, status string) (*catalogclient.Subscription, error) {
	return s.API.UpdateSubscription(ctx, id, catalogclient.SubscriptionUpdate{Status: &status})
}

// Request is the creation request of o with the receiver's webhook
// credentials (user and password), checked as a usage error first.
func (o CreateOptions) Request(user, pass string) (catalogclient.SubscriptionRequest, error) {
	events := strings.Split(strings.ReplaceAll(o.Events, " ", ""), ",")
	switch strings.Join(events, ",") {
	case "created", "modified", "created,modified", "modified,created", "deleted":
	default:
		return catalogclient.SubscriptionRequest{}, cli.Usagef("--events must be created, modified, created,modified or deleted")
	}
	req := catalogclient.SubscriptionRequest{SubscriptionType: o.Type, FilterParam: o.Filter, SubscriptionEvent: events, Priority: 1, Status: "running"}
	switch o.Type {
	case "pull":
		if o.Endpoint != "" {
			return req, cli.Usagef("--endpoint is for push subscriptions")
		}
		return req, nil
	case "push":
	default:
		return req, cli.Usagef("--type must be push or pull")
	}
	return req, pushTo(&req, o.Endpoint, user, pass, o.Insecure)
}

// pushTo makes req a PUSH subscription to endpoint with the receiver's
// webhook credentials, refusing as usage errors an endpoint the webhook
// cannot be and missing credentials.
func pushTo(req *catalogclient.SubscriptionRequest, endpoint, user, pass string, insecure bool) error {
	if err := CheckEndpoint(endpoint, insecure); err != nil {
		return err
	}
	if user == "" || pass == "" {
		return cli.Usagef("set RECEIVER_USERNAME and RECEIVER_PASSWORD (or RECEIVER_PASSWORD_FILE): the receiver refuses unauthenticated notifications")
	}
	req.NotificationEndpoint, req.NotificationEpUsername, req.NotificationEpPassword = endpoint, user, pass
	return nil
}

// CheckEndpoint refuses, as a usage error, an endpoint the receiver's
// webhook cannot be: not absolute, not https (unless insecure, for local
// tests), with credentials, a query, or a trailing slash.
func CheckEndpoint(endpoint string, insecure bool) error {
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
		return cli.Usagef("--endpoint is required for a push subscription")
	case err != nil || !u.IsAbs() || u.Host == "":
		return cli.Usagef("--endpoint %q is not an absolute URL", endpoint)
	case u.Scheme == "http" && !insecure:
		return cli.Usagef("--endpoint must be https:// (the credentials travel with every notification); --insecure-endpoint allows http:// for local tests")
	case u.Scheme != "https" && u.Scheme != "http":
		return cli.Usagef("--endpoint must be https://")
	case u.User != nil:
		return cli.Usagef("--endpoint must not carry credentials; set RECEIVER_USERNAME and RECEIVER_PASSWORD")
	case len(u.Path) > 1 && strings.HasSuffix(u.Path, "/"):
		// The receiver takes both, but an Ingress with an Exact path (as
		// the chart's) would answer 404 to every notification.
		return cli.Usagef("--endpoint %q ends in '/': give the webhook path exactly as the receiver serves it (%s)", endpoint, strings.TrimRight(endpoint, "/"))
	case u.RawQuery != "" || u.Fragment != "":
		return cli.Usagef("--endpoint must not carry a query or fragment")
	}
	return nil
}

// findSame returns a running or paused subscription equal to req in type,
// endpoint, filter and events.
func findSame(subs []catalogclient.Subscription, req catalogclient.SubscriptionRequest) *catalogclient.Subscription {
	want := slices.Sorted(slices.Values(req.SubscriptionEvent))
	for i, s := range subs {
		if (s.Status == "running" || s.Status == "paused") && s.SubscriptionType == req.SubscriptionType &&
			s.NotificationEndpoint == req.NotificationEndpoint && s.FilterParam == req.FilterParam &&
			slices.Equal(slices.Sorted(slices.Values(s.SubscriptionEvent)), want) {
			return &subs[i]
		}
	}
	return nil
}

// RunningOf are the running subscriptions of subs.
func RunningOf(subs []catalogclient.Subscription) []catalogclient.Subscription {
	var out []catalogclient.Subscription
	for _, s := range subs {
		if s.Status == "running" {
			out = append(out, s)
		}
	}
	return out
}

// LimitError says the account is at its limit of running subscriptions,
// lists them and the choices create offers.
func LimitError(running []catalogclient.Subscription, max int) error {
	return limitError(running, max, "--replace ID to pause one of them first (--replace-action cancel to cancel it), or `register pause ID` / `register cancel ID` yourself")
}

// handLimitError is LimitError where --replace does not help (apply, which
// replaces only the endpoint's own subscription; create --resume of a
// paused one): another one has to be paused or cancelled by hand.
func handLimitError(running []catalogclient.Subscription, max int) error {
	return limitError(running, max, "`register pause ID` or `register cancel ID`, then run this again")
}

func limitError(running []catalogclient.Subscription, max int, choices string) error {
	var b strings.Builder
	source := "--max-running"
	if max == DocumentedMaxRunning {
		source = "the live CDSE documentation's limit of 1 running subscription per user; the interface description said 2: --max-running 2 if your account allows it"
	}
	fmt.Fprintf(&b, "the account already has %d running subscription(s), the limit is %d (%s):\n", len(running), max, source)
	for _, s := range running {
		fmt.Fprintf(&b, "  %s  %s  events=%s  endpoint=%s  filter=%q\n", s.ID, s.SubscriptionType, strings.Join(s.SubscriptionEvent, ","), s.NotificationEndpoint, s.FilterParam)
	}
	b.WriteString("nothing was changed. Choose: " + choices + ", or --max-running if your account allows more")
	return errors.New(b.String())
}

// PrintSubscriptions writes subs as out says (a table, JSON or YAML).
func PrintSubscriptions(w io.Writer, out *cli.Output, subs []catalogclient.Subscription) error {
	if subs == nil {
		subs = []catalogclient.Subscription{}
	}
	return out.Print(w, subs, func(out io.Writer) error {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tEVENTS\tENDPOINT\tFILTER\tLAST NOTIFICATION")
		for _, s := range subs {
			last := "-"
			if !s.LastNotificationDate.IsZero() {
				last = s.LastNotificationDate.UTC().Format(time.RFC3339)
			}
			endpoint := s.NotificationEndpoint
			if endpoint == "" {
				endpoint = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.SubscriptionType, s.Status, strings.Join(s.SubscriptionEvent, ","), endpoint, s.FilterParam, last)
		}
		return tw.Flush()
	})
}

// UpdateOptions are the flags of update: what to change on a PUSH
// subscription (the catalogue's PATCH takes Status, and for PUSH the
// endpoint and its credentials; never the filter or the events).
type UpdateOptions struct {
	Endpoint, Username, PasswordFile string
	Insecure                         bool
	Preflight                        PreflightOptions
}

// Update changes a PUSH subscription's endpoint and/or the credentials it
// sends, and says what it did to log. Run again with the same options it
// changes nothing it can see (the catalogue never shows the password: a
// given password is set again, which is harmless).
func (s *Session) Update(ctx context.Context, id string, o UpdateOptions, log io.Writer) (*catalogclient.Subscription, error) {
	if o.Endpoint == "" && o.Username == "" && o.PasswordFile == "" {
		return nil, cli.Usagef("give what to change: --endpoint, --receiver-username and/or --receiver-password-file")
	}
	if o.Endpoint != "" {
		if err := CheckEndpoint(o.Endpoint, o.Insecure); err != nil {
			return nil, err
		}
	}
	var password string
	if o.PasswordFile != "" {
		b, err := os.ReadFile(o.PasswordFile)
		if err != nil {
			return nil, cli.Usagef("--receiver-password-file: %v", err)
		}
		// As for every *_FILE secret: the trailing newline is not part of it.
		if password = strings.TrimRight(string(b), "\r\n"); len(password) < 12 {
			return nil, cli.Usagef("--receiver-password-file: the password is shorter than 12 characters (the receiver refuses it)")
		}
	}
	cur, err := s.API.GetSubscription(ctx, id)
	if err != nil {
		return nil, err
	}
	if cur.SubscriptionType != "push" {
		return nil, fmt.Errorf("subscription %s is a %s subscription: only a push subscription has an endpoint and credentials", id, cur.SubscriptionType)
	}
	var u catalogclient.SubscriptionUpdate
	var did []string
	if o.Endpoint != "" && o.Endpoint != cur.NotificationEndpoint {
		u.NotificationEndpoint = &o.Endpoint
		did = append(did, fmt.Sprintf("endpoint %s → %s", cur.NotificationEndpoint, o.Endpoint))
	}
	if o.Username != "" && o.Username != cur.NotificationEpUsername {
		u.NotificationEpUsername = &o.Username
		did = append(did, fmt.Sprintf("user %q → %q", cur.NotificationEpUsername, o.Username))
	}
	if password != "" {
		u.NotificationEpPassword = &password
		did = append(did, "password set from "+o.PasswordFile)
	}
	if len(did) == 0 {
		fmt.Fprintf(log, "subscription %s already sends to %s as %q; nothing changed\n", id, cur.NotificationEndpoint, cur.NotificationEpUsername)
		return cur, nil
	}
	// What the catalogue will send after the change: the new endpoint and
	// credentials, each else the current one.
	endpoint, user := cur.NotificationEndpoint, cur.NotificationEpUsername
	if o.Endpoint != "" {
		endpoint = o.Endpoint
	}
	if o.Username != "" {
		user = o.Username
	}
	user, pass := s.preflightCredentials(user, password)
	if err := o.Preflight.run(ctx, endpoint, user, pass, o.Insecure || endpoint == cur.NotificationEndpoint && plainHTTP(endpoint), log); err != nil {
		return nil, err
	}
	updated, err := s.API.UpdateSubscription(ctx, id, u)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "updated subscription %s: %s\n", id, strings.Join(did, "; "))
	return updated, nil
}
