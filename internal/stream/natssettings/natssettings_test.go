package natssettings

import (
	"strings"
	"testing"
)

// TestNATSValidate: every problem at once, naming its setting, never a
// password of a URL; an empty NATS_URL is the binary's to refuse.
func TestNATSValidate(t *testing.T) {
	for _, ok := range []NATS{{}, {NATSURL: "nats://a:4222, nats://b:4222", NATSUser: "u", NATSPassword: "p"}, {NATSURL: "tls://a:4222", NATSToken: "t"}, {NATSCreds: "/c"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	err := NATS{NATSURL: "nats://u:topsecret@,host:4222", NATSToken: "t", NATSUser: "u", NATSPassword: "p"}.Validate()
	for _, want := range []string{`NATS_URL: "nats://u:xxxxx@"`, `NATS_URL: "host:4222"`, "NATS_TOKEN cannot be combined with NATS_USER or NATS_CREDS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "topsecret") {
		t.Errorf("a password in %v", err)
	}
	if err := (NATS{NATSPassword: "p"}).Validate(); err == nil || err.Error() != "NATS_PASSWORD needs NATS_USER" {
		t.Errorf("a password alone: %v", err)
	}
}

func TestProductStreamValidate(t *testing.T) {
	if err := DefaultProductStream().Validate(); err != nil {
		t.Error(err)
	}
	if err := DefaultProductStream().ValidateFetchConsumer(); err != nil {
		t.Error(err)
	}
	p := ProductStream{Stream: "a.b", SubjectPrefix: "cdse.>", FetchConsumer: "fetch.er"}
	err := p.Validate()
	for _, want := range []string{`NATS_STREAM "a.b" must be`, `NATS_SUBJECT_PREFIX "cdse.>" must be`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in %v", want, err)
		}
	}
	if err := p.ValidateFetchConsumer(); err == nil || !strings.Contains(err.Error(), `FETCH_CONSUMER "fetch.er" must be a name`) {
		t.Errorf("FETCH_CONSUMER: %v", err)
	}
	for prefix, ok := range map[string]bool{"cdse.product": true, "a": true, "": false, "a..b": false, ".a": false, "a.*": false, "a b": false} {
		if got := CheckPrefix("X", prefix) == nil; got != ok {
			t.Errorf("CheckPrefix(%q): %v, want %v", prefix, got, ok)
		}
	}
}

func TestPrefixesOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"cdse", "cdse", true},
		{"cdse.product", "cdse", true},
		{"cdse", "cdse.product", true},
		{"cdse.product", "cdse.fetched", false},
		{"cdse", "cdsex", false},
		{"cdsex.product", "cdse", false},
	} {
		if got := PrefixesOverlap(c.a, c.b); got != c.want {
			t.Errorf("PrefixesOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
