package fetch

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// waitLog waits (bounded) until logs hold want, and fails the test with
// them when they do not.
func waitLog(t *testing.T, logs *bins.SyncBuffer, want string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(logs.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the fetcher's logs after %s:\n%s", want, d, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStartUpErrorsNameTheSetting is a fetcher that cannot set itself up
// on NATS (issue 38 items 1 and 2): its log says what the server refused,
// to which user, and which setting to fix, rather than retrying on a
// timeout or a client's buffer error.
func TestStartUpErrorsNameTheSetting(t *testing.T) {
	w := startWorld(t, true)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		wants []string
		never string
		// exits is the fetcher's exit code when it stops by itself; 0:
		// it retries until stopped.
		exits int
	}{
		{
			name: "no fetcher login: the embedded server's anonymous consumer",
			env:  map[string]string{"FETCH_TARGET": "file://" + t.TempDir()},
			wants: []string{`permissions violation`, `user=anonymous`, `$JS.API.STREAM.`,
				"NATS_EMBEDDED_FETCHER_USER", "NATS_USER and NATS_PASSWORD"},
			never: "context deadline exceeded",
		},
		{
			name:  "a wrong password",
			env:   map[string]string{"FETCH_TARGET": "file://" + t.TempDir(), "NATS_USER": fetcherUser, "NATS_PASSWORD": "wrong"},
			wants: []string{"Authorization Violation", `user=` + fetcherUser, "NATS_USER and NATS_PASSWORD"},
			never: "outbound buffer limit exceeded",
			exits: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := w.launchFetcher(t, tc.env)
			for _, want := range tc.wants {
				waitLog(t, p.logs, want, 30*time.Second)
			}
			if tc.exits != 0 {
				if code := p.exit(30 * time.Second); code != tc.exits {
					t.Errorf("exit code %d, want %d", code, tc.exits)
				}
			}
			p.stop()
			if strings.Contains(p.logs.String(), tc.never) {
				t.Errorf("the log says %q:\n%s", tc.never, p.logs)
			}
		})
	}
}

// TestAdminPortInUse: a fetcher whose admin address is taken (a second
// fetcher beside the first) says which setting to change (issue 38 item
// 9), and exits 1.
func TestAdminPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	code, stdout, stderr := bins.Run(t, bin, map[string]string{"FETCH_ADMIN_ADDR": taken.Addr().String(), "FETCH_TARGET": "file://" + t.TempDir(),
		"CDSE_USERNAME": user, "CDSE_PASSWORD": password, "NATS_URL": "nats://127.0.0.1:1", "LOG_FORMAT": "text"})
	if code != 1 || !strings.Contains(stderr, "FETCH_ADMIN_ADDR "+taken.Addr().String()) || !strings.Contains(stderr, "address already in use") {
		t.Errorf("exit %d; want 1 and an error naming FETCH_ADMIN_ADDR and its address:\n%s\n%s", code, stderr, stdout)
	}
}
