package natsconn

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/stream/natssettings"
)

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		want   bool
	}{
		{"2.10.0", "2.10.0", true},
		{"v2.10.27", "2.10.0", true},
		{"2.9.25", "2.10.0", false},
		{"2.11.0-RC.1", "2.10.0", true},
		{"3.0.0", "2.10.0", true},
		{"2.10", "2.10.0", false},
		{"", "2.10.0", false},
		{"2.x.0", "2.10.0", false},
	} {
		if got := VersionAtLeast(c.v, c.min); got != c.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.want)
		}
	}
}

// TestFromSettings: every NATS setting reaches the options, and nothing
// else is set (the embedded server's and the fetcher's own are theirs).
func TestFromSettings(t *testing.T) {
	got := FromSettings(natssettings.NATS{NATSURL: "nats://a:4222", NATSCreds: "/c", NATSUser: "u", NATSPassword: "p", NATSToken: "t", NATSCA: "/ca"})
	want := Options{URL: "nats://a:4222", CredsFile: "/c", User: "u", Password: "p", Token: "t", CAFile: "/ca"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestExplainNotConnected: a request made while the client is not
// connected (a server that is not there) is explained as that, with the
// last reason the client knows if any, never as the client's "outbound
// buffer limit exceeded".
func TestExplainNotConnected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	log := logrus.New()
	log.SetOutput(io.Discard)
	o := Options{URL: url}
	nc, err := Connect(o, log)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	perr := nc.Publish("x", nil)
	if !errors.Is(perr, nats.ErrReconnectBufExceeded) {
		t.Fatalf("publish while not connected: %v", perr)
	}
	got := Explain(nc, o, perr)
	if !errors.Is(got, ErrNotConnected) || !errors.Is(got, nats.ErrReconnectBufExceeded) || strings.Contains(got.Error(), "outbound buffer") {
		t.Errorf("Explain: %v", got)
	}
}
