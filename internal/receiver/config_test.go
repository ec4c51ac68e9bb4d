package receiver

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
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
	c, err := Load([]string{"receiver", "--config", file, "--addr", ":7002"}, env(map[string]string{
		"RECEIVER_ADDR":          ":7001",
		"RECEIVER_PATH":          "/from-env",
		"RECEIVER_USERNAME":      "cdse",
		"RECEIVER_PASSWORD_FILE": pwFile,
	}), &bytes.Buffer{})
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
		{"bad values reported together", []string{"receiver"}, map[string]string{"RECEIVER_MAX_BODY": "lots", "RECEIVER_DEDUPE_WINDOW": "forever"}, []string{"RECEIVER_MAX_BODY", "RECEIVER_DEDUPE_WINDOW"}},
		{"unknown flag", []string{"receiver", "--nope"}, nil, []string{"-nope"}},
		{"password flag does not exist", []string{"receiver", "--password", "x"}, nil, []string{"-password"}},
		{"missing secret file", []string{"receiver"}, map[string]string{"RECEIVER_PASSWORD_FILE": "/nonexistent/pw"}, []string{"RECEIVER_PASSWORD_FILE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, env(tt.env), &bytes.Buffer{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := Load([]string{"receiver", "--help"}, env(nil), &out)
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	c := DefaultConfig()
	for _, s := range c.settings() {
		if !strings.Contains(out.String(), s.env) {
			t.Errorf("--help does not document %s", s.env)
		}
	}
}

func validConfig() Config {
	c := DefaultConfig()
	c.Username, c.Password = "cdse", "a-long-enough-password"
	return c
}

func TestValidate(t *testing.T) {
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
		{"no catalogue url: no download url nor ce-source", func(c *Config) { c.CDSECatalogueURL = "" }, nil},
		{"pull without a catalogue url", func(c *Config) {
			c.PullSubscription, c.CDSEUsername, c.CDSEPassword, c.CDSECatalogueURL = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "u", "p", ""
		}, []string{"need CDSE_CATALOGUE_URL"}},
		{"template of all tokens", func(c *Config) {
			c.SubjectTemplate = "collection.productType.platform.processingLevel.tileId.relativeOrbit.event"
		}, nil},
		{"quarantine overlaps the product subjects", func(c *Config) { c.QuarantinePrefix = "cdse.product.bad" }, []string{"QUARANTINE_SUBJECT_PREFIX", "overlaps"}},
		{"reconcile events and page size", func(c *Config) {
			c.ReconcileInterval, c.ReconcileFilter, c.CDSEUsername, c.CDSEPassword = time.Hour, "x", "u", "p"
			c.ReconcileEvents, c.ReconcilePageSize = "created,updated", 5000
		}, []string{"RECONCILE_EVENTS", "updated", "RECONCILE_PAGE_SIZE"}},
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
