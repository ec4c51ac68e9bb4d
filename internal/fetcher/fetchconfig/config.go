// Package fetchconfig is the fetcher's configuration: every setting, its
// default, where it is read from and what is wrong with it, in the style of
// internal/receiver/config (the struct's tags are the one list; --help, the docs
// table and the receiver's list of known variables are made from it).
//
// It is data: it imports no runtime package, so that internal/receiver/config can
// import its list of names (Names) to know the fetcher's variables
// without warning about them.
package fetchconfig

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin/loginsettings"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/platform/logging"
	"github.com/cdse-jetstream/receiver/internal/stream/natssettings"
)

// Config is every setting of the fetcher. Tags as internal/receiver/config's: koanf
// is the name (environment variable and YAML key), flag the command-line
// flag (none for secrets), help the one line of --help and the docs, secret
// marks a value masked everywhere and also read from <NAME>_FILE. The
// settings the receiver reads too are groups declared once and embedded
// here and in its settings.
type Config struct {
	// NATS_STREAM, NATS_SUBJECT_PREFIX, FETCH_CONSUMER: the product stream
	// consumed, as the receiver names it, and the fetcher's durable on it.
	natssettings.ProductStream

	Subjects        string        `koanf:"FETCH_SUBJECTS" flag:"subjects" help:"product subjects to fetch, comma-separated (empty: created and modified under NATS_SUBJECT_PREFIX, and deleted with FETCH_ON_DELETE=delete)"`
	Start           string        `koanf:"FETCH_START" flag:"start" help:"where a new consumer starts: new (only what arrives from now), all (the whole stream) or an RFC 3339 time"`
	Target          string        `koanf:"FETCH_TARGET" flag:"target" help:"where products are stored: file:///dir or s3://bucket/prefix (required; S3 from the AWS_* environment)"`
	Concurrency     int           `koanf:"FETCH_CONCURRENCY" flag:"concurrency" help:"downloads at once across every replica of the consumer (its MaxAckPending)"`
	MaxAttempts     int           `koanf:"FETCH_MAX_ATTEMPTS" flag:"max-attempts" help:"deliveries of one product event before it is given up (on the failed subject)"`
	IdleTimeout     time.Duration `koanf:"FETCH_IDLE_TIMEOUT" flag:"idle-timeout" help:"a download that receives nothing this long is cut and resumed"`
	RequireChecksum bool          `koanf:"FETCH_REQUIRE_CHECKSUM" flag:"require-checksum" help:"refuse a product the catalogue gives no checksum for (false: store it, marked Cdse-Unverified)"`
	OnDelete        string        `koanf:"FETCH_ON_DELETE" flag:"on-delete" help:"what a deleted event does to the stored product: keep or delete"`
	Versions        string        `koanf:"FETCH_VERSIONS" flag:"versions" help:"which versions of an acquisition are downloaded: all, or latest (a product the receiver's versions bucket <NATS_STREAM>_VERSIONS knows superseded is not downloaded, its fetched event says Cdse-Skipped; one it does not know yet is downloaded)"`
	OnSuperseded    string        `koanf:"FETCH_ON_SUPERSEDED" flag:"on-superseded" help:"what the receiver's notice of a superseded product does to it once stored: keep, or delete (it and its STAC item are removed, said by a fetched event with Cdse-Superseded-By; a product known superseded is not downloaded either)"`
	// RECEIVER_VERSIONS_SUBJECT_PREFIX: the notices' subjects, as the
	// receiver puts them in the product stream.
	natssettings.Notices
	STAC         bool   `koanf:"FETCH_STAC" flag:"stac" help:"write a STAC 1.1.0 item beside each stored product (<key>.json), named by the fetched event's Cdse-Stac-Item (docs/stac-items.md)"`
	TrustedHosts string `koanf:"FETCH_TRUSTED_HOSTS" flag:"trusted-hosts" help:"hosts the login token may be sent to on redirects, comma-separated domain[:port]: each domain with its subdomains, over HTTPS, on the port given or 443 (CDSE_DOWNLOAD_URL's own origin always)"`
	KeyTemplate  string `koanf:"FETCH_KEY_TEMPLATE" flag:"key-template" help:"object key of a product, of {collection} {productType} {yyyy} {mm} {dd} {name} {id}; must end in {name}.zip"`
	Files        string `koanf:"FETCH_FILES" flag:"files" help:"only these files of each product, comma-separated path globs relative to its root folder (** any folders: GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2,MTD_MSIL2A.xml), fetched one by one, verified against its manifest, stored as the folder <key without .zip>/; empty: the whole archive"`
	interestfile.FileSetting
	AdminAddr       string        `koanf:"FETCH_ADMIN_ADDR" flag:"admin-addr" help:"listen address of /healthz, /readyz, /status, /metrics; keep it private"`
	FetchedPrefix   string        `koanf:"FETCH_FETCHED_PREFIX" flag:"fetched-prefix" help:"subject prefix of the fetched events: <prefix>.<event>.<collection>.<productType>"`
	FailedPrefix    string        `koanf:"FETCH_FAILED_PREFIX" flag:"failed-prefix" help:"subject prefix of the given-up events: <prefix>.<collection>.<productType>"`
	Stream          string        `koanf:"FETCH_STREAM" flag:"fetch-stream" help:"stream of the fetched and failed events (the fetcher declares it)"`
	DedupeWindow    time.Duration `koanf:"FETCH_DEDUPE_WINDOW" flag:"dedupe-window" help:"that stream's duplicate window: how long a fetched event is recognised as already stored"`
	ShutdownTimeout time.Duration `koanf:"FETCH_SHUTDOWN_TIMEOUT" flag:"shutdown-timeout" help:"after SIGTERM or Ctrl-C, running downloads get this long before they are cut (a second signal cuts them at once); a directory keeps the partial file to resume from, S3 starts over"`
	S3PathStyle     string        `koanf:"FETCH_S3_PATH_STYLE" flag:"s3-path-style" help:"S3 addressing: true (endpoint/bucket/key), false (bucket.endpoint/key); empty: true for an IP or localhost endpoint"`
	S3PartSize      int64         `koanf:"FETCH_S3_PART_SIZE" flag:"s3-part-size" help:"S3 multipart part size (5MiB to 5GiB), larger for a product that would need more than 9 000 parts (S3 allows 10 000); memory is about (FETCH_S3_CONCURRENCY + 1) parts a download"`
	S3Concurrency   int           `koanf:"FETCH_S3_CONCURRENCY" flag:"s3-concurrency" help:"parts of one download sent to S3 at once"`
	AckWait         time.Duration `koanf:"FETCH_ACK_WAIT" flag:"ack-wait" help:"a product event taken by a replica that then says nothing this long (killed, its node lost) goes to another; a running download renews it"`
	PartialMaxAge   time.Duration `koanf:"FETCH_PARTIAL_MAX_AGE" flag:"partial-max-age" help:"unfinished downloads untouched this long are removed from the target (partial files; S3 multipart uploads started this long ago), at start and hourly"`
	DiskReserve     int64         `koanf:"FETCH_DISK_RESERVE" flag:"disk-reserve" help:"bytes of a directory target's file system no download writes into: the disk never fills (a product that needs them pauses the fetcher until there is room)"`
	MaxUnknownSize  int64         `koanf:"FETCH_MAX_UNKNOWN_SIZE" flag:"max-unknown-size" help:"the most a product whose notification gives no length may be; past it the download fails for good, its partial removed"`
	MaxRetryAfter   time.Duration `koanf:"FETCH_MAX_RETRY_AFTER" flag:"max-retry-after" help:"the longest Retry-After of the download service honoured; a wait over a quarter of FETCH_ACK_WAIT gives the product event back with that delay rather than holding a download slot"`
	MinRate         int64         `koanf:"FETCH_MIN_RATE" flag:"min-rate" help:"bytes a second a download must average over FETCH_MIN_RATE_WINDOW, else it is cut (its partial kept) and resumed later, freeing the slot; 0 never"`
	MinRateWindow   time.Duration `koanf:"FETCH_MIN_RATE_WINDOW" flag:"min-rate-window" help:"the window FETCH_MIN_RATE is averaged over"`
	DownloadURL     string        `koanf:"CDSE_DOWNLOAD_URL" flag:"cdse-download-url" help:"download service base: <url>/Products(<id>)/$value"`

	// NATS_URL, NATS_CREDS, NATS_USER, NATS_PASSWORD, NATS_TOKEN, NATS_CA:
	// how the fetcher reaches NATS, as the receiver does.
	natssettings.NATS

	// CDSE_USERNAME, CDSE_PASSWORD, CDSE_TOTP, CDSE_CLIENT_ID,
	// CDSE_TOKEN_URL, CDSE_CATALOGUE_URL: the catalogue login, as the
	// receiver and register log in.
	loginsettings.Login

	logging.Settings // LOG_LEVEL, LOG_FORMAT
}

// ConfigEnv names the YAML file of settings when --config is not given.
const ConfigEnv = "FETCH_CONFIG"

// DefaultKeyTemplate is FETCH_KEY_TEMPLATE's default.
const DefaultKeyTemplate = "{collection}/{productType}/{yyyy}/{mm}/{dd}/{name}.zip"

// Default holds every default, in one place. The prefixes are
// topology.PlannedPrefixes' (the embedded server already denies consumers
// publishing to them); written here as text so that this package stays data.
func Default() Config {
	return Config{
		ProductStream:   natssettings.DefaultProductStream(),
		Start:           "new",
		Concurrency:     4,
		MaxAttempts:     10,
		IdleTimeout:     60 * time.Second,
		OnDelete:        "keep",
		Versions:        "all",
		OnSuperseded:    "keep",
		Notices:         natssettings.DefaultNotices(),
		STAC:            true,
		TrustedHosts:    "dataspace.copernicus.eu",
		KeyTemplate:     DefaultKeyTemplate,
		AdminAddr:       ":9091",
		FetchedPrefix:   "cdse.fetched",
		FailedPrefix:    "cdse.fetchfailed",
		Stream:          "CDSE_FETCHED",
		DedupeWindow:    24 * time.Hour,
		ShutdownTimeout: 30 * time.Second,
		PartialMaxAge:   24 * time.Hour,
		AckWait:         2 * time.Minute,
		S3PartSize:      5 << 20,
		DiskReserve:     1 << 30,
		MaxUnknownSize:  64 << 30,
		MaxRetryAfter:   5 * time.Minute,
		MinRate:         64 << 10,
		MinRateWindow:   5 * time.Minute,
		S3Concurrency:   2,
		DownloadURL:     cdse.DownloadURL,
		NATS:            natssettings.NATS{NATSURL: "nats://127.0.0.1:4222"}, // the receiver's embedded server on this machine
		Login:           loginsettings.Default(),
		Settings:        logging.DefaultSettings(),
	}
}

// Names are every variable the fetcher reads: its settings, the secrets'
// <NAME>_FILE and FETCH_CONFIG. internal/receiver/config knows them through this
// list, so that one environment file serves the receiver and the fetcher.
func Names() []string {
	out := []string{ConfigEnv}
	for _, s := range settingsList {
		out = append(out, s.Name)
		if s.Secret {
			out = append(out, s.Name+"_FILE")
		}
	}
	return out
}

// SubjectList is FETCH_SUBJECTS as a list, or its default: created and
// modified under NATS_SUBJECT_PREFIX, and deleted when deletes are acted on.
func (c Config) SubjectList() []string {
	if l := split(c.Subjects); len(l) > 0 {
		return l
	}
	out := []string{c.SubjectPrefix + ".created.>", c.SubjectPrefix + ".modified.>"}
	if c.OnDelete == "delete" {
		out = append(out, c.SubjectPrefix+".deleted.>")
	}
	return out
}

// ChecksVersions says whether a product is looked up in the versions
// bucket before it is downloaded: FETCH_VERSIONS=latest, and
// FETCH_ON_SUPERSEDED=delete (a product known superseded would be removed
// as soon as stored).
func (c Config) ChecksVersions() bool { return c.Versions == "latest" || c.OnSuperseded == "delete" }

// ReadsNotices says whether the fetcher's consumer takes the receiver's
// notices of supersession (<RECEIVER_VERSIONS_SUBJECT_PREFIX>.>):
// FETCH_ON_SUPERSEDED=delete acts on them; with keep they would be acked
// and nothing more.
func (c Config) ReadsNotices() bool { return c.OnSuperseded == "delete" }

// S3PathStyleOption is FETCH_S3_PATH_STYLE for fetch.S3Options: nil when
// empty (decided by the endpoint).
func (c Config) S3PathStyleOption() *bool {
	if c.S3PathStyle == "" {
		return nil
	}
	b := c.S3PathStyle == "true"
	return &b
}

// FileList is FETCH_FILES as a list of patterns (none: the whole
// archive).
func (c Config) FileList() []string { return split(c.Files) }

// TrustedHostList is FETCH_TRUSTED_HOSTS as a list.
func (c Config) TrustedHostList() []string { return split(c.TrustedHosts) }

// StartTime is FETCH_START's time; zero for new and all.
func (c Config) StartTime() (time.Time, error) {
	switch c.Start {
	case "new", "all":
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, c.Start)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Validate reports every problem of c at once, each naming its setting.
func (c Config) Validate() error { return c.validate(true) }

// targetProblem is what is wrong with FETCH_TARGET as a URL, "" when
// nothing; what each scheme needs is its target's to say (the fetcher's
// scheme table, fetcher.CheckTarget, joined to these problems at start).
func targetProblem(target string) string {
	u, err := url.Parse(target)
	switch {
	case target == "":
		return "FETCH_TARGET is required: file:///dir or s3://bucket/prefix"
	case err != nil || u.Scheme == "":
		return fmt.Sprintf("FETCH_TARGET %q: want a URL such as file:///dir or s3://bucket/prefix", target)
	}
	return ""
}

// ValidateStreams is Validate without what only downloading needs (the
// target, the catalogue login): the settings `fetcher failed` reads the
// fetcher's streams with.
func (c Config) ValidateStreams() error { return c.validate(false) }

func (c Config) validate(downloads bool) error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	// group adds the problems of a group of settings the fetcher shares
	// with the receiver, checked where the group is declared.
	group := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if downloads {
		// `fetcher failed` stores nothing: no target, no login.
		if p := targetProblem(c.Target); p != "" {
			bad("%s", p)
		}
	}
	group(c.ProductStream.Validate())
	group(c.ProductStream.ValidateFetchConsumer())
	for _, s := range c.SubjectList() {
		if strings.ContainsAny(s, " \t") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") {
			bad("FETCH_SUBJECTS: %q is not a subject", s)
		}
	}
	if c.Start != "new" && c.Start != "all" {
		if _, err := time.Parse(time.RFC3339, c.Start); err != nil {
			bad("FETCH_START %q: want new, all or an RFC 3339 time (2025-01-31T00:00:00Z)", c.Start)
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		bad("FETCH_CONCURRENCY %d: want 1 to 10000", c.Concurrency)
	}
	if c.MaxAttempts < 1 {
		bad("FETCH_MAX_ATTEMPTS %d: want at least 1", c.MaxAttempts)
	}
	if c.IdleTimeout < time.Second {
		bad("FETCH_IDLE_TIMEOUT %s: want at least 1s", c.IdleTimeout)
	}
	if c.OnDelete != "keep" && c.OnDelete != "delete" {
		bad("FETCH_ON_DELETE %q: want keep or delete", c.OnDelete)
	}
	if c.Versions != "all" && c.Versions != "latest" {
		bad("FETCH_VERSIONS %q: want all or latest", c.Versions)
	}
	if c.OnSuperseded != "keep" && c.OnSuperseded != "delete" {
		bad("FETCH_ON_SUPERSEDED %q: want keep or delete", c.OnSuperseded)
	}
	if c.ReadsNotices() {
		group(c.Notices.Validate())
		if natssettings.PrefixesOverlap(c.VersionsPrefix, c.SubjectPrefix) {
			bad("RECEIVER_VERSIONS_SUBJECT_PREFIX %q overlaps NATS_SUBJECT_PREFIX %q: the notices have subjects of their own", c.VersionsPrefix, c.SubjectPrefix)
		}
	}
	if len(c.TrustedHostList()) == 0 {
		bad("FETCH_TRUSTED_HOSTS is empty: the login could not follow the download service's redirects")
	}
	for _, h := range c.TrustedHostList() {
		if !trustedHostEntry(h) {
			bad("FETCH_TRUSTED_HOSTS: %q: want domain[:port] (no scheme, path or user)", h)
		}
	}
	if err := CheckKeyTemplate(c.KeyTemplate); err != nil {
		bad("FETCH_KEY_TEMPLATE %q: %v", c.KeyTemplate, err)
	}
	if _, err := manifest.Compile(c.FileList()); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			bad("FETCH_FILES: %s", line)
		}
	}
	for _, p := range []struct{ name, v string }{{"FETCH_FETCHED_PREFIX", c.FetchedPrefix}, {"FETCH_FAILED_PREFIX", c.FailedPrefix}} {
		if p.v == "" || strings.ContainsAny(p.v, " \t*>") || strings.HasPrefix(p.v, ".") || strings.HasSuffix(p.v, ".") {
			bad("%s %q: want dot-separated tokens without wildcards", p.name, p.v)
		}
	}
	if natssettings.PrefixesOverlap(c.FetchedPrefix, c.FailedPrefix) {
		bad("FETCH_FETCHED_PREFIX %q and FETCH_FAILED_PREFIX %q overlap", c.FetchedPrefix, c.FailedPrefix)
	}
	for _, p := range []string{c.FetchedPrefix, c.FailedPrefix} {
		if natssettings.PrefixesOverlap(p, c.SubjectPrefix) {
			bad("%q overlaps NATS_SUBJECT_PREFIX %q: the fetcher's events would land on the product stream", p, c.SubjectPrefix)
		}
	}
	if c.Stream == "" || c.Stream == c.ProductStream.Stream {
		bad("FETCH_STREAM %q: want a stream of its own, not NATS_STREAM", c.Stream)
	}
	if c.DedupeWindow < time.Second {
		bad("FETCH_DEDUPE_WINDOW %s: want at least 1s", c.DedupeWindow)
	}
	if c.S3PathStyle != "" && c.S3PathStyle != "true" && c.S3PathStyle != "false" {
		bad("FETCH_S3_PATH_STYLE %q: want true, false or empty", c.S3PathStyle)
	}
	if c.S3PartSize < 5<<20 || c.S3PartSize > 5<<30 {
		bad("FETCH_S3_PART_SIZE %d: want 5MiB to 5GiB (S3's limits of a part)", c.S3PartSize)
	}
	if c.S3Concurrency < 1 || c.S3Concurrency > 64 {
		bad("FETCH_S3_CONCURRENCY %d: want 1 to 64", c.S3Concurrency)
	}
	if c.AckWait < 5*time.Second {
		bad("FETCH_ACK_WAIT %s: want at least 5s", c.AckWait)
	}
	if c.PartialMaxAge < time.Hour {
		bad("FETCH_PARTIAL_MAX_AGE %s: want at least 1h (a younger partial may be a download still running)", c.PartialMaxAge)
	}
	if c.DiskReserve < 0 {
		bad("FETCH_DISK_RESERVE %d: want 0 or more bytes", c.DiskReserve)
	}
	if c.MaxUnknownSize < 1<<20 {
		bad("FETCH_MAX_UNKNOWN_SIZE %d: want at least 1MiB", c.MaxUnknownSize)
	}
	if c.MaxRetryAfter < time.Second {
		bad("FETCH_MAX_RETRY_AFTER %s: want at least 1s", c.MaxRetryAfter)
	}
	if c.MinRate < 0 {
		bad("FETCH_MIN_RATE %d: want 0 (never) or more bytes a second", c.MinRate)
	}
	if c.MinRateWindow < 10*time.Second {
		bad("FETCH_MIN_RATE_WINDOW %s: want at least 10s", c.MinRateWindow)
	}
	if c.ShutdownTimeout <= 0 {
		bad("FETCH_SHUTDOWN_TIMEOUT %s: want more than 0", c.ShutdownTimeout)
	}
	if !loginsettings.HTTPURL(c.DownloadURL) {
		bad("CDSE_DOWNLOAD_URL: want an http(s) URL") // the value may hold a password: not shown
	}
	// `fetcher failed` logs in nowhere, and checks the addresses all the same.
	group(c.Login.ValidateURLs())
	if c.NATSURL == "" {
		bad("NATS_URL is required") // the fetcher has no embedded server
	}
	group(c.NATS.Validate())
	if downloads {
		group(c.Login.Required())
	}
	group(c.Settings.Validate())
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "\n"))
}

// trustedHostEntry: h is domain[:port], the port 1 to 65535.
func trustedHostEntry(h string) bool {
	d, port, found := strings.Cut(h, ":")
	if found {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return d != "" && !strings.ContainsAny(d, "/@?#[] \t")
}

// KeyFields are the names FETCH_KEY_TEMPLATE may use.
var KeyFields = []string{"collection", "productType", "yyyy", "mm", "dd", "name", "id"}

// CheckKeyTemplate reports a template with an unknown or unclosed field,
// or one that does not end in {name}.zip (the object's name is the
// product's: what a user downloading it by hand would get).
func CheckKeyTemplate(t string) error {
	if !strings.HasSuffix(t, "{name}.zip") {
		return fmt.Errorf("must end in {name}.zip")
	}
	if strings.HasPrefix(t, "/") {
		return fmt.Errorf("must not start with /")
	}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.Contains(rest, "}") {
				return fmt.Errorf("a } without {")
			}
			return nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("a { without }")
		}
		if f := rest[i+1 : i+j]; !slices.Contains(KeyFields, f) {
			return fmt.Errorf("unknown field {%s}: want one of %s", f, strings.Join(KeyFields, ", "))
		}
		rest = rest[i+j+1:]
	}
}
