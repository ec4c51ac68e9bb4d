package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// load is Load of a command line (with BindFlags' flags and --config) and
// an environment, as the receiver's serve command calls it.
func load(args []string, getenv map[string]string) (Config, error) {
	fs := pflag.NewFlagSet("receiver", pflag.ContinueOnError)
	BindFlags(fs)
	file := fs.String("config", getenv["RECEIVER_CONFIG"], "")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return Load(Sources{File: *file, Getenv: env(getenv), Flags: fs})
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "receiver.yaml")
	if err := os.WriteFile(file, []byte("RECEIVER_ADDR: \":7000\"\nRECEIVER_PATH: /from-file\nRECEIVER_DEDUPE_WINDOW: 2h\nreceiver_max_body: 2MiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-a-file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load([]string{"--config", file, "--addr", ":7002"}, map[string]string{
		"RECEIVER_ADDR":          ":7001",
		"RECEIVER_PATH":          "/from-env",
		"RECEIVER_USERNAME":      "cdse",
		"RECEIVER_PASSWORD_FILE": pwFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"flag beats env", c.Addr, ":7002"},
		{"env beats file", c.Path, "/from-env"},
		{"file beats default", c.DedupeWindow.String(), "2h0m0s"},
		{"file key case-insensitive, size suffix", time.Duration(c.MaxBody).String(), time.Duration(2 << 20).String()},
		{"secret from file, newline trimmed", c.Password, "from-a-file-secret"},
		{"default kept", c.Stream, "CDSE_PRODUCTS"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"bad values reported together, with their source", nil, map[string]string{"RECEIVER_MAX_BODY": "lots", "RECEIVER_DEDUPE_WINDOW": "forever"},
			[]string{`RECEIVER_MAX_BODY (environment): cannot parse "lots"`, `RECEIVER_DEDUPE_WINDOW (environment): cannot parse "forever"`}},
		{"a flag's bad value", []string{"--max-notifications", "012x"}, nil, []string{`RECEIVER_MAX_NOTIFICATIONS (flags): cannot parse "012x"`}},
		{"unknown flag", []string{"--nope"}, nil, []string{"--nope"}},
		{"password flag does not exist", []string{"--password", "x"}, nil, []string{"--password"}},
		{"missing secret file", nil, map[string]string{"RECEIVER_PASSWORD_FILE": "/nonexistent/pw"}, []string{"RECEIVER_PASSWORD_FILE"}},
		{"a secret twice", nil, map[string]string{"RECEIVER_PASSWORD": "a-long-enough-one", "RECEIVER_PASSWORD_FILE": "/etc/hostname"}, []string{"RECEIVER_PASSWORD and RECEIVER_PASSWORD_FILE are both set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.args, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Count(err.Error(), line) > 1 {
					t.Errorf("reported twice: %q", line)
				}
			}
		})
	}
}

// TestLoadFileAsWritten: every value of the YAML file is its text as
// written — never a YAML number, boolean or null turned back into text —
// an empty value is no value, <NAME>_FILE works in the file, and a
// secret's value never appears in an error.
func TestLoadFileAsWritten(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("0x00ff-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml string
		check      func(Config) string
		wantErr    []string
	}{
		{"hex password", "RECEIVER_PASSWORD: 0x1F2E3D4C5B6A\n", func(c Config) string { return c.Password }, nil},
		{"leading zero", "RECEIVER_USERNAME: 012\n", func(c Config) string { return c.Username }, nil},
		{"exponent", "RECEIVER_PASSWORD: 1e3\n", func(c Config) string { return c.Password }, nil},
		{"long digits", "RECEIVER_PASSWORD: 123456789012345678901234567890\n", func(c Config) string { return c.Password }, nil},
		{"yes is text", "RECEIVER_USERNAME: yes\n", func(c Config) string { return c.Username }, nil},
		{"true is text", "CDSE_USERNAME: true\n", func(c Config) string { return c.CDSEUsername }, nil},
		{"quoted keeps its spaces", "RECEIVER_PASSWORD: ' padded secret '\n", func(c Config) string { return c.Password }, nil},
		{"empty is unset", "PULL_SUBSCRIPTION_ID:\nRECEIVER_PATH: ''\nNATS_STREAM: ~\n", func(c Config) string { return c.PullSubscription + "|" + c.Path + "|" + c.Stream }, nil},
		{"secret from a file named in the file", "RECEIVER_PASSWORD_FILE: " + pw + "\n", func(c Config) string { return c.Password }, nil},
		{"decimal, not octal", "RECEIVER_MAX_NOTIFICATIONS: 010\n", func(c Config) string { return strings.Repeat("x", c.MaxNotifications) }, nil},
		{"boolean setting", "RECEIVER_PPROF: true\nNATS_CLOUDEVENTS: false\n", func(c Config) string {
			return strings.TrimSpace(strings.Repeat("pprof ", btoi(c.PProf)) + strings.Repeat("ce", btoi(c.CloudEvents)))
		}, nil},
		{"unknown key", "RECEIVER_PASWORD: x\n", nil, []string{`unknown setting "RECEIVER_PASWORD"`, "line 1"}},
		{"_FILE of a non-secret", "RECEIVER_PATH_FILE: /x\n", nil, []string{`unknown setting "RECEIVER_PATH_FILE"`}},
		{"a list", "RECEIVER_PATH: [a, b]\n", nil, []string{"must be a single value"}},
		{"twice", "RECEIVER_PATH: /a\nreceiver_path: /b\n", nil, []string{"given twice"}},
		{"a secret and its file", "RECEIVER_PASSWORD: visible-in-no-error\nRECEIVER_PASSWORD_FILE: " + pw + "\n", nil, []string{"both set"}},
		{"a bad number", "RECEIVER_MAX_BODY: 0x10\n", nil, []string{`RECEIVER_MAX_BODY (config file`, `cannot parse "0x10"`}},
	}
	want := map[string]string{
		"hex password": "0x1F2E3D4C5B6A", "leading zero": "012", "exponent": "1e3", "long digits": "123456789012345678901234567890",
		"yes is text": "yes", "true is text": "true", "quoted keeps its spaces": " padded secret ",
		"empty is unset": "|/notifications|CDSE_PRODUCTS", "secret from a file named in the file": "0x00ff-from-a-file",
		"decimal, not octal": "xxxxxxxxxx", "boolean setting": "pprof",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "receiver.yaml")
			if err := os.WriteFile(file, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := load([]string{"--config", file}, nil)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("accepted")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "visible-in-no-error") {
					t.Errorf("a secret is in the error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(c); got != want[tt.name] {
				t.Errorf("got %q, want %q", got, want[tt.name])
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBareBooleanFlags: a boolean flag alone is true and takes nothing
// after it; =false turns off a default that is on.
func TestBareBooleanFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("RECEIVER_PATH: /from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load([]string{"--pprof", "--config", file, "--cloudevents=false", "--webhook"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.PProf || c.CloudEvents || !c.Webhook || c.Path != "/from-file" {
		t.Errorf("pprof %v cloudevents %v webhook %v path %q", c.PProf, c.CloudEvents, c.Webhook, c.Path)
	}
}

// TestEveryFlagAndName: every setting has a name, help, and a flag unless
// it is a secret (a flag would show in ps); names and flags are unique.
func TestEveryFlagAndName(t *testing.T) {
	names, flags := map[string]bool{}, map[string]bool{}
	for _, s := range Settings() {
		if s.Name == "" || s.Help == "" || (s.Flag == "") != s.Secret {
			t.Errorf("setting %+v: want a name, help, and a flag exactly when not secret", s)
		}
		if names[s.Name] || (s.Flag != "" && flags[s.Flag]) {
			t.Errorf("%s/%s given twice", s.Name, s.Flag)
		}
		names[s.Name], flags[s.Flag] = true, true
	}
}

func validConfig() Config {
	c := Default()
	c.Username, c.Password = "cdse", "a-long-enough-password"
	return c
}

func TestValidate(t *testing.T) {
	interests := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(interests, []byte("interests:\n  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An interest that takes the latest versions only needs the versions
	// consumer: refused without it, never routed as all.
	latest := filepath.Join(t.TempDir(), "latest.yaml")
	if err := os.WriteFile(latest, []byte("interests:\n  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n  - name: s2-latest\n    versions: latest\n    filter: Collection/Name eq 'SENTINEL-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"valid defaults", func(*Config) {}, nil},
		{"no credentials", func(c *Config) { c.Username, c.Password = "", "" }, []string{"RECEIVER_USERNAME is required", "RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required"}},
		{"short password", func(c *Config) { c.Password = "xq7z" }, []string{"shorter than 12"}},
		{"everything wrong at once", func(c *Config) {
			c.Path = "notifications"
			c.MaxBody = 10
			c.SubjectPrefix = "cdse.>"
			c.Stream = "a.b"
			c.StreamReplicas = 3
			c.LogFormat = "xml"
		}, []string{"RECEIVER_PATH", "RECEIVER_MAX_BODY", "NATS_SUBJECT_PREFIX", "NATS_STREAM ", "NATS_STREAM_REPLICAS must be 1 with the embedded", "LOG_FORMAT"}},
		{"max age below window", func(c *Config) { c.StreamMaxAge = time.Hour }, []string{"NATS_STREAM_MAX_AGE"}},
		{"fetcher's consumer not a name", func(c *Config) { c.FetchConsumer = "fetch.er" }, []string{`FETCH_CONSUMER "fetch.er" must be a name`}},
		{"fetcher's consumer with an external nats", func(c *Config) { c.NATSURL, c.FetchConsumer = "nats://a:4222", "any.thing" }, nil},
		{"embedded sync always", func(c *Config) { c.NATSEmbeddedSync = "always" }, nil},
		{"embedded sync", func(c *Config) { c.NATSEmbeddedSync = "sometimes" }, []string{`NATS_EMBEDDED_SYNC: "sometimes" must be always or a positive duration`}},
		{"embedded sync zero", func(c *Config) { c.NATSEmbeddedSync = "0s" }, []string{"NATS_EMBEDDED_SYNC"}},
		{"external nats url", func(c *Config) { c.NATSURL = "nats://a:4222,nats://b:4222"; c.StreamReplicas = 3 }, nil},
		{"bad nats url, password not shown", func(c *Config) { c.NATSURL = "nats://u:topsecret@" }, []string{"NATS_URL"}},
		{"token and user", func(c *Config) { c.NATSURL = "nats://a:4222"; c.NATSToken = "t"; c.NATSUser = "u" }, []string{"NATS_TOKEN cannot"}},
		{"same listen addresses", func(c *Config) { c.AdminAddr = c.Addr }, []string{"must differ"}},
		{"subject template", func(c *Config) { c.SubjectTemplate = "event.>.Tile" }, []string{`NATS_SUBJECT_TEMPLATE "event.>.Tile"`, `unknown token ">"`, `unknown token "Tile"`}},
		{"stac", func(c *Config) {
			c.StacCollections = "S2MSI2A=sentinel-2-l2a,S2MSI1C,a.b=c,X=a/b"
			c.StacURL = "stac.example"
		}, []string{`"S2MSI1C" is not productType=collection`, `"a.b=c"`, `"X=a/b"`, `STAC_URL "stac.example"`}},
		{"catalogue url checked for the webhook alone", func(c *Config) { c.CDSECatalogueURL = "catalogue.example/odata/v1" }, []string{`CDSE_CATALOGUE_URL "catalogue.example/odata/v1" is not an http(s) URL`}},
		{"no catalogue url: no download url nor ce-source", func(c *Config) { c.CDSECatalogueURL = None }, nil},
		{"stac off", func(c *Config) { c.StacURL = None }, nil},
		{"pull without a catalogue url", func(c *Config) {
			c.PullSubscription, c.CDSEUsername, c.CDSEPassword, c.CDSECatalogueURL = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "u", "p", None
		}, []string{"CDSE_CATALOGUE_URL \"none\" is not an http(s) URL: the catalogue is listed and read there"}},
		{"template of all tokens", func(c *Config) {
			c.SubjectTemplate = "collection.productType.platform.processingLevel.tileId.relativeOrbit.event"
		}, nil},
		{"quarantine overlaps the product subjects", func(c *Config) { c.QuarantinePrefix = "cdse.product.bad" }, []string{"QUARANTINE_SUBJECT_PREFIX", "overlaps"}},
		// COMPLETE_STREAM and COMPLETE_SUBJECT_PREFIX, checked as the
		// quarantine's are: a name of its own, subjects no other stream of
		// the receiver's takes (the product stream holds the fetcher's
		// retries).
		{"a second receiver's own complete stream", func(c *Config) {
			c.Stream, c.SubjectPrefix, c.CompleteStream, c.CompletePrefix = "STAGING", "staging.product", "STAGING_COMPLETE", "staging.complete"
		}, nil},
		{"complete stream and subjects, every problem at once", func(c *Config) { c.CompleteStream, c.CompletePrefix = c.Stream, "a.>" },
			[]string{`COMPLETE_STREAM "CDSE_PRODUCTS" must be`, `COMPLETE_SUBJECT_PREFIX "a.>" must be`}},
		{"complete stream named as the quarantine", func(c *Config) { c.CompleteStream = c.QuarantineStream }, []string{`COMPLETE_STREAM "CDSE_QUARANTINE"`}},
		{"complete subjects in the product subjects", func(c *Config) { c.CompletePrefix = "cdse.product.complete" }, []string{"COMPLETE_SUBJECT_PREFIX", "overlaps NATS_SUBJECT_PREFIX"}},
		{"complete subjects are the quarantine's", func(c *Config) { c.CompletePrefix = c.QuarantinePrefix }, []string{"COMPLETE_SUBJECT_PREFIX", "overlaps QUARANTINE_SUBJECT_PREFIX"}},
		{"complete subjects in the interests'", func(c *Config) { c.InterestsFile, c.CompletePrefix = interests, c.InterestPrefix+".x" },
			[]string{"COMPLETE_SUBJECT_PREFIX", "overlaps INTEREST_SUBJECT_PREFIX"}},
		{"the interests' prefix without interests", func(c *Config) { c.CompletePrefix = c.InterestPrefix }, nil},
		{"complete subjects over the fetcher's retries", func(c *Config) { c.CompletePrefix = "cdse" }, []string{"COMPLETE_SUBJECT_PREFIX", "overlaps the fetcher's retries \"cdse.fetchretry\""}},
		// The versions consumer: a TTL, and notice subjects of their own.
		{"a second receiver's own notices", func(c *Config) {
			c.Stream, c.SubjectPrefix, c.CompleteStream, c.CompletePrefix, c.VersionsPrefix = "STAGING", "staging.product", "STAGING_COMPLETE", "staging.complete", "staging.superseded"
		}, nil},
		{"versions settings, every problem at once", func(c *Config) { c.VersionsMaxAge, c.VersionsPrefix = time.Minute, "a.*" },
			[]string{"RECEIVER_VERSIONS_MAX_AGE 1m0s must be at least 1h", `RECEIVER_VERSIONS_SUBJECT_PREFIX "a.*" must be`}},
		{"notices in the product subjects", func(c *Config) { c.VersionsPrefix = "cdse.product.superseded" }, []string{"RECEIVER_VERSIONS_SUBJECT_PREFIX", "overlaps NATS_SUBJECT_PREFIX"}},
		{"notices over the complete ranges and the retries", func(c *Config) { c.VersionsPrefix = "cdse" },
			[]string{"overlaps COMPLETE_SUBJECT_PREFIX", "overlaps the fetcher's retries"}},
		{"notices in the interests'", func(c *Config) { c.InterestsFile, c.VersionsPrefix = interests, c.InterestPrefix },
			[]string{"RECEIVER_VERSIONS_SUBJECT_PREFIX", "overlaps INTEREST_SUBJECT_PREFIX"}},
		{"a latest interest with the versions consumer", func(c *Config) { c.InterestsFile = latest }, nil},
		{"a latest interest without the versions consumer", func(c *Config) { c.InterestsFile, c.Versions = latest, false },
			[]string{`INTERESTS_FILE ` + latest + `: interest "s2-latest" (line 4): versions: latest needs the versions consumer (RECEIVER_VERSIONS=true)`}},
		{"versions off: their settings unread", func(c *Config) { c.Versions, c.VersionsMaxAge, c.VersionsPrefix = false, 0, c.SubjectPrefix }, nil},
		{"acme", func(c *Config) {
			c.ACMEDomains, c.ACMEHTTPAddr, c.ACMEEmail = "hooks.example.org, hooks2.example.org", ":80", "ops@example.org"
		}, nil},
		{"acme with certificate files", func(c *Config) { c.ACMEDomains, c.TLSCertFile, c.TLSKeyFile = "hooks.example.org", "c.pem", "k.pem" }, []string{"two ways to get the webhook's certificate: set one"}},
		{"acme domains", func(c *Config) { c.ACMEDomains = "hooks.example.org,10.0.0.1,*.example.org,bad_name.example" }, []string{"RECEIVER_ACME_DOMAINS", "10.0.0.1", "*.example.org", "bad_name.example"}},
		{"acme directory and http address", func(c *Config) {
			c.ACMEDomains, c.ACMEDirectory, c.ACMEHTTPAddr = "hooks.example.org", "http://ca.example/dir", "80"
		}, []string{"RECEIVER_ACME_DIRECTORY", "RECEIVER_ACME_HTTP_ADDR"}},
		{"acme settings without domains", func(c *Config) { c.ACMEHTTPAddr = ":80" }, []string{"need RECEIVER_ACME_DOMAINS"}},
		{"a setting two concerns check is one problem", func(c *Config) { c.PublishTimeout = 0 }, []string{"RECEIVER_PUBLISH_TIMEOUT 0s must be between 0 and 1m"}},
		{"reconcile events and page size", func(c *Config) {
			c.ReconcileInterval, c.ReconcileFilter, c.CDSEUsername, c.CDSEPassword = time.Hour, "x", "u", "p"
			c.ReconcileEvents, c.ReconcilePageSize = "created,updated", 5000
		}, []string{"RECONCILE_EVENTS", "updated", "RECONCILE_PAGE_SIZE"}},
		{"watch with the login", func(c *Config) { c.CDSEUsername, c.CDSEPassword, c.WatchResume = "u", "p", true }, nil},
		{"watch settings", func(c *Config) {
			c.CDSEUsername, c.CDSEPassword, c.WatchInterval, c.WatchQuiet = "u", "p", 10*time.Second, 60*24*time.Hour
		}, []string{"WATCH_INTERVAL 10s is shorter than 1m", "WATCH_QUIET 1440h0m0s must be more than 0 and less than 1440h"}},
		{"watch without the login", func(c *Config) { c.WatchSubscription = "x" }, []string{"WATCH_SUBSCRIPTION_ID and WATCH_RESUME need the catalogue login"}},
		{"watch off but asked for", func(c *Config) {
			c.CDSEUsername, c.CDSEPassword, c.WatchInterval, c.WatchResume = "u", "p", 0, true
		}, []string{"need WATCH_INTERVAL"}},
		{"watch's catalogue url", func(c *Config) { c.CDSEUsername, c.CDSEPassword, c.CDSECatalogueURL = "u", "p", None }, []string{"WATCH_INTERVAL: CDSE_CATALOGUE_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Count(err.Error(), line) > 1 {
					t.Errorf("reported twice: %q", line)
				}
			}
			if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), c.Password) && c.Password != "" {
				t.Errorf("a secret is in the error: %v", err)
			}
		})
	}
}

func TestFieldsMaskSecrets(t *testing.T) {
	c := validConfig()
	c.NATSURL = "nats://user:natspass@host:4222"
	c.NATSToken = "tok-en-value"
	f := c.Fields()
	dump := ""
	for k, v := range f {
		dump += k + "=" + v.(string) + " "
	}
	for _, secret := range []string{c.Password, "natspass", "tok-en-value"} {
		if strings.Contains(dump, secret) {
			t.Errorf("config dump shows a secret: %s", dump)
		}
	}
	if f["RECEIVER_USERNAME"] != "cdse" || f["RECEIVER_PASSWORD"] != "*****" {
		t.Errorf("dump %v", f)
	}
}

var update = flag.Bool("update", false, "rewrite the settings table of docs/configuration.md")

// TestDocsTable: docs/configuration.md's table of settings is made from
// Config's tags, never copied by hand (go test ./internal/receiver/config -update
// rewrites it).
func TestDocsTable(t *testing.T) {
	var b strings.Builder
	b.WriteString(schema.Table())
	path := filepath.Join("..", "..", "..", "docs", "configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings:begin -->\n", "<!-- settings:end -->"
	before, rest, ok := strings.Cut(string(doc), begin)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q ... %q block", path, begin, end)
	}
	want := before + begin + b.String() + end + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Errorf("%s's settings table is not Config's: go test ./internal/receiver/config -update", path)
	}
}
