// Package register is the operator's command for the catalogue's
// subscriptions: it logs in (internal/auth), and creates the receiver's
// subscription idempotently and within the account's limits, lists, shows,
// pauses, resumes and cancels subscriptions (internal/catalogclient).
package register

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cli"
)

// MaxTotal is the catalogue's limit on running + paused subscriptions.
const MaxTotal = 10

// errUsage marks a command line error (exit code 2).
var errUsage = cli.ErrUsage

const settingsHelp = `Settings come from the environment (never from flags, which show in ps):
  CDSE_USERNAME, CDSE_PASSWORD or CDSE_PASSWORD_FILE, CDSE_TOTP (two-factor
  code), CDSE_CLIENT_ID (default cdse-public), CDSE_TOKEN_URL, CDSE_CATALOGUE_URL;
  for create: RECEIVER_USERNAME, RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE
  (the Basic-auth credentials the catalogue will send to the receiver).

Exit codes: 0 ok, 1 error, 2 usage.`

// Run is the register command: it returns the exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return cli.Execute(ctx, NewCommand(getenv), args[1:], stdout, stderr)
}

// NewCommand is the register command tree. Nothing logs in before a
// command runs, so --help and completion work without credentials.
func NewCommand(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "register",
		Short: "Create and manage the catalogue subscription that feeds the receiver",
		Long: `register logs in to the CDSE identity provider and manages the account's
catalogue subscriptions: it creates the receiver's subscription (idempotently,
within the account's limits), lists, shows, pauses, resumes and cancels them.

` + settingsHelp,
		Example: `  register create --endpoint https://receiver.example.org/notifications --filter "Collection/Name eq 'SENTINEL-2'" --events created,modified
  register create --type pull --filter "Collection/Name eq 'SENTINEL-1'"
  register list -o json
  register pause 0b4f6b1e-...`,
	}
	out := cli.AddOutputFlag(root)
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return out.Check() }
	// api logs in lazily, when a command that needs the catalogue runs.
	api := func(cmd *cobra.Command) (*command, error) {
		return newCommand(getenv, cmd.OutOrStdout(), out)
	}
	var o createOptions
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the receiver's subscription (idempotent)",
		Long: `create makes the receiver's subscription. Running it again with the same
type, endpoint, filter and events changes nothing (--resume resumes it when
paused). At the account's limit of running subscriptions it refuses and lists
them, unless --replace says which one to pause (or cancel) first.

` + settingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api(cmd)
			if err != nil {
				return err
			}
			return c.create(cmd.Context(), o, cmd.ErrOrStderr())
		},
	}
	f := create.Flags()
	f.StringVar(&o.endpoint, "endpoint", "", "the receiver's public URL (https://.../notifications); push only")
	f.StringVar(&o.filter, "filter", "", "OData filter, e.g. \"Collection/Name eq 'SENTINEL-2'\" (empty: every product)")
	f.StringVar(&o.events, "events", "created", "created, modified, created,modified or deleted")
	f.StringVar(&o.typ, "type", "push", "push or pull")
	f.IntVar(&o.maxRunning, "max-running", 2, "the account's limit of running subscriptions (the live service documents 1)")
	f.StringVar(&o.replace, "replace", "", "at the running limit, pause (or cancel) this subscription first")
	f.StringVar(&o.replaceAction, "replace-action", "pause", "what --replace does: pause or cancel")
	f.BoolVar(&o.resume, "resume", false, "resume the matching subscription if it is paused")
	f.BoolVar(&o.insecure, "insecure-endpoint", false, "allow an http:// endpoint (local testing only)")
	_ = create.RegisterFlagCompletionFunc("events", cobra.FixedCompletions([]string{"created", "modified", "created,modified", "deleted"}, cobra.ShellCompDirectiveNoFileComp))
	_ = create.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"push", "pull"}, cobra.ShellCompDirectiveNoFileComp))
	_ = create.RegisterFlagCompletionFunc("replace-action", cobra.FixedCompletions([]string{"pause", "cancel"}, cobra.ShellCompDirectiveNoFileComp))

	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the account's subscriptions",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api(cmd)
			if err != nil {
				return err
			}
			return c.list(cmd.Context())
		},
	}
	whoami := &cobra.Command{
		Use:   "whoami",
		Short: "Check the login only",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api(cmd)
			if err != nil {
				return err
			}
			if err := c.login(cmd.Context()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "logged in as %s\n", getenv("CDSE_USERNAME"))
			return err
		},
	}
	var so statusOptions
	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "Check the whole chain: subscription, endpoint, credentials, last notification, receiver, stream",
		Long: `status joins what the catalogue says about the subscription(s) feeding the
receiver with what the receiver says about itself (GET /status on its admin
port), and checks: the subscription is running; its endpoint is the
receiver's (--endpoint, or the receiver's webhook path); it sends the user
the receiver expects; its last notification and the stream's newest message
are younger than --max-silence; the receiver is ready. It prints a check per
line (✔ ok, ✘ failed, ! warning, - not checked) and exits 1 when a check
failed: run it from a Kubernetes CronJob (the chart's statusCheck) or by hand.

` + settingsHelp,
		Example: `  register status --receiver http://127.0.0.1:9090 --endpoint https://hooks.example.org/notifications
  kubectl exec deploy/cdse-receiver -- register status --receiver http://127.0.0.1:9090 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if so.maxSilence <= 0 {
				return cli.Usagef("--max-silence must be positive")
			}
			c, err := api(cmd)
			if err != nil {
				return err
			}
			r, err := c.status(cmd.Context(), so, &http.Client{Timeout: 10 * time.Second}, time.Now())
			if err != nil {
				return err
			}
			if err := out.Print(cmd.OutOrStdout(), r, func(w io.Writer) error { return printReport(w, r) }); err != nil {
				return err
			}
			if !r.OK {
				return errChecksFailed
			}
			return nil
		},
	}
	sf := statusCmd.Flags()
	sf.StringVar(&so.receiver, "receiver", getenv("RECEIVER_ADMIN_URL"), "the receiver's admin URL, e.g. http://127.0.0.1:9090 (default $RECEIVER_ADMIN_URL)")
	sf.StringVar(&so.endpoint, "endpoint", "", "the receiver's public webhook URL, as registered")
	sf.DurationVar(&so.maxSilence, "max-silence", 6*time.Hour, "fail when the last notification is older than this")
	root.AddCommand(create, list, whoami, statusCmd)
	for _, one := range []struct{ name, short string }{
		{"get", "Show one subscription"},
		{"pause", "Pause a subscription (the catalogue keeps it, sends nothing)"},
		{"resume", "Resume a paused subscription"},
		{"cancel", "Cancel (delete) a subscription"},
	} {
		root.AddCommand(&cobra.Command{
			Use:   one.name + " ID",
			Short: one.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := api(cmd)
				if err != nil {
					return err
				}
				return c.one(cmd.Context(), one.name, args[0])
			},
		})
	}
	cli.AddVersion(root)
	return root
}

type command struct {
	api    *catalogclient.Client
	login  func(context.Context) error
	out    io.Writer
	output *cli.Output
	getenv func(string) string
}

func newCommand(getenv func(string) string, out io.Writer, output *cli.Output) (*command, error) {
	password, err := auth.SecretFromEnv(getenv, "CDSE_PASSWORD")
	if err != nil {
		return nil, err
	}
	var missing []string
	if getenv("CDSE_USERNAME") == "" {
		missing = append(missing, "CDSE_USERNAME")
	}
	if password == "" {
		missing = append(missing, "CDSE_PASSWORD or CDSE_PASSWORD_FILE")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: set %s", errUsage, strings.Join(missing, " and "))
	}
	tokens := auth.NewPasswordSource(auth.PasswordConfig{
		TokenURL: getenv("CDSE_TOKEN_URL"), ClientID: getenv("CDSE_CLIENT_ID"),
		Username: getenv("CDSE_USERNAME"), Password: password, TOTP: getenv("CDSE_TOTP"),
	})
	base := getenv("CDSE_CATALOGUE_URL")
	if base == "" {
		base = catalogclient.DefaultBaseURL
	}
	return &command{
		api:    catalogclient.New(base, tokens, nil),
		login:  func(ctx context.Context) error { _, err := tokens.Token(ctx); return err },
		out:    out,
		output: output,
		getenv: getenv,
	}, nil
}

// createOptions are the flags of create.
type createOptions struct {
	endpoint, filter, events, typ, replace, replaceAction string
	maxRunning                                            int
	resume, insecure                                      bool
}

func (c *command) create(ctx context.Context, o createOptions, stderr io.Writer) error {
	if o.replaceAction != "pause" && o.replaceAction != "cancel" {
		return fmt.Errorf("%w: --replace-action must be pause or cancel", errUsage)
	}
	req, err := o.request(c.getenv)
	if err != nil {
		return err
	}
	subs, err := c.api.ListSubscriptions(ctx)
	if err != nil {
		return err
	}
	// Idempotent: the same subscription already there changes nothing.
	if same := findSame(subs, req); same != nil {
		if same.Status == "paused" && o.resume {
			if running := runningOf(subs); len(running) >= o.maxRunning {
				return limitError(running, o.maxRunning)
			}
			st := "running"
			if same, err = c.api.UpdateSubscription(ctx, same.ID, catalogclient.SubscriptionUpdate{Status: &st}); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "resumed the existing subscription %s\n", same.ID)
		} else if same.Status == "paused" {
			fmt.Fprintf(stderr, "the subscription already exists but is paused; run again with --resume to resume it\n")
		} else {
			fmt.Fprintf(stderr, "the subscription already exists; nothing changed\n")
		}
		return c.print([]catalogclient.Subscription{*same})
	}
	if len(subs) >= MaxTotal {
		return fmt.Errorf("the account has %d subscriptions (running and paused), the most allowed; cancel one first (register cancel ID)", len(subs))
	}
	if running := runningOf(subs); len(running) >= o.maxRunning {
		if o.replace == "" {
			return limitError(running, o.maxRunning)
		}
		if !slices.ContainsFunc(running, func(s catalogclient.Subscription) bool { return s.ID == o.replace }) {
			return fmt.Errorf("--replace %s: not one of the running subscriptions", o.replace)
		}
		verb := "paused"
		if o.replaceAction == "cancel" {
			verb = "cancelled"
			err = c.api.DeleteSubscription(ctx, o.replace)
		} else {
			st := "paused"
			_, err = c.api.UpdateSubscription(ctx, o.replace, catalogclient.SubscriptionUpdate{Status: &st})
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s subscription %s\n", verb, o.replace)
	}
	created, err := c.api.CreateSubscription(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "created %s subscription %s: events %s, filter %q\n", created.SubscriptionType, created.ID, strings.Join(created.SubscriptionEvent, ","), created.FilterParam)
	return c.print([]catalogclient.Subscription{*created})
}

func (o createOptions) request(getenv func(string) string) (catalogclient.SubscriptionRequest, error) {
	events := strings.Split(strings.ReplaceAll(o.events, " ", ""), ",")
	switch strings.Join(events, ",") {
	case "created", "modified", "created,modified", "modified,created", "deleted":
	default:
		return catalogclient.SubscriptionRequest{}, fmt.Errorf("%w: --events must be created, modified, created,modified or deleted", errUsage)
	}
	req := catalogclient.SubscriptionRequest{SubscriptionType: o.typ, FilterParam: o.filter, SubscriptionEvent: events, Priority: 1, Status: "running"}
	switch o.typ {
	case "pull":
		if o.endpoint != "" {
			return req, fmt.Errorf("%w: --endpoint is for push subscriptions", errUsage)
		}
		return req, nil
	case "push":
	default:
		return req, fmt.Errorf("%w: --type must be push or pull", errUsage)
	}
	u, err := url.Parse(o.endpoint)
	switch {
	case o.endpoint == "":
		return req, fmt.Errorf("%w: --endpoint is required for a push subscription", errUsage)
	case err != nil || !u.IsAbs() || u.Host == "":
		return req, fmt.Errorf("%w: --endpoint %q is not an absolute URL", errUsage, o.endpoint)
	case u.Scheme == "http" && !o.insecure:
		return req, fmt.Errorf("%w: --endpoint must be https:// (the credentials travel with every notification); --insecure-endpoint allows http:// for local tests", errUsage)
	case u.Scheme != "https" && u.Scheme != "http":
		return req, fmt.Errorf("%w: --endpoint must be https://", errUsage)
	case u.User != nil:
		return req, fmt.Errorf("%w: --endpoint must not carry credentials; set RECEIVER_USERNAME and RECEIVER_PASSWORD", errUsage)
	case len(u.Path) > 1 && strings.HasSuffix(u.Path, "/"):
		// The receiver takes both, but an Ingress with an Exact path (as
		// the chart's) would answer 404 to every notification.
		return req, fmt.Errorf("%w: --endpoint %q ends in '/': give the webhook path exactly as the receiver serves it (%s)", errUsage, o.endpoint, strings.TrimRight(o.endpoint, "/"))
	case u.RawQuery != "" || u.Fragment != "":
		return req, fmt.Errorf("%w: --endpoint must not carry a query or fragment", errUsage)
	}
	user := getenv("RECEIVER_USERNAME")
	pass, err := auth.SecretFromEnv(getenv, "RECEIVER_PASSWORD")
	if err != nil {
		return req, err
	}
	if user == "" || pass == "" {
		return req, fmt.Errorf("%w: set RECEIVER_USERNAME and RECEIVER_PASSWORD (or RECEIVER_PASSWORD_FILE): the receiver refuses unauthenticated notifications", errUsage)
	}
	req.NotificationEndpoint, req.NotificationEpUsername, req.NotificationEpPassword = o.endpoint, user, pass
	return req, nil
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

func runningOf(subs []catalogclient.Subscription) []catalogclient.Subscription {
	var out []catalogclient.Subscription
	for _, s := range subs {
		if s.Status == "running" {
			out = append(out, s)
		}
	}
	return out
}

func limitError(running []catalogclient.Subscription, max int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the account already has %d running subscription(s), the limit is %d:\n", len(running), max)
	for _, s := range running {
		fmt.Fprintf(&b, "  %s  %s  events=%s  endpoint=%s  filter=%q\n", s.ID, s.SubscriptionType, strings.Join(s.SubscriptionEvent, ","), s.NotificationEndpoint, s.FilterParam)
	}
	b.WriteString("nothing was changed. Choose: --replace ID to pause one of them first (--replace-action cancel to cancel it), or `register pause ID` / `register cancel ID` yourself, or --max-running if your account allows more")
	return errors.New(b.String())
}

func (c *command) list(ctx context.Context) error {
	subs, err := c.api.ListSubscriptions(ctx)
	if err != nil {
		return err
	}
	return c.print(subs)
}

func (c *command) one(ctx context.Context, cmd, id string) error {
	var (
		s   *catalogclient.Subscription
		err error
	)
	switch cmd {
	case "get":
		s, err = c.api.GetSubscription(ctx, id)
	case "pause", "resume":
		st := map[string]string{"pause": "paused", "resume": "running"}[cmd]
		s, err = c.api.UpdateSubscription(ctx, id, catalogclient.SubscriptionUpdate{Status: &st})
	case "cancel":
		if err = c.api.DeleteSubscription(ctx, id); err == nil {
			fmt.Fprintf(c.out, "cancelled %s\n", id)
			return nil
		}
	}
	if err != nil {
		return err
	}
	return c.print([]catalogclient.Subscription{*s})
}

func (c *command) print(subs []catalogclient.Subscription) error {
	return c.output.Print(c.out, subs, func(out io.Writer) error {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tTYPE\tSTATUS\tEVENTS\tENDPOINT\tFILTER\tLAST NOTIFICATION")
		for _, s := range subs {
			last := "-"
			if !s.LastNotificationDate.IsZero() {
				last = s.LastNotificationDate.UTC().Format(time.RFC3339)
			}
			endpoint := s.NotificationEndpoint
			if endpoint == "" {
				endpoint = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.SubscriptionType, s.Status, strings.Join(s.SubscriptionEvent, ","), endpoint, s.FilterParam, last)
		}
		return w.Flush()
	})
}
