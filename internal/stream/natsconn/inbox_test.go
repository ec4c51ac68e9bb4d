package natsconn

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestInboxPrefix: both kinds of connection take their replies under
// InboxPrefix when it is set, and under _INBOX otherwise (an external
// NATS's permissions are written for it).
func TestInboxPrefix(t *testing.T) {
	srv := natstest.RunJetStream(t)
	log, _ := test.NewNullLogger()
	for _, tc := range []struct {
		prefix, want string
	}{
		{"", "_INBOX."},
		{"_RCV", "_RCV."},
	} {
		o := Options{URL: srv.ClientURL(), InboxPrefix: tc.prefix}
		long, err := Connect(o, log)
		if err != nil {
			t.Fatal(err)
		}
		once, err := ConnectOnce(o, "test")
		if err != nil {
			long.Close()
			t.Fatal(err)
		}
		for name, inbox := range map[string]string{"Connect": long.NewRespInbox(), "ConnectOnce": once.NewRespInbox()} {
			if !strings.HasPrefix(inbox, tc.want) {
				t.Errorf("%s with prefix %q: reply inbox %s, want %s…", name, tc.prefix, inbox, tc.want)
			}
		}
		long.Close()
		once.Close()
	}
}
