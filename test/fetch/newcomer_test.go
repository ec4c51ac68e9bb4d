package fetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
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
	t.Parallel()
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
	t.Parallel()
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

// runBounded is bins.Run for a binary that might not end: killed after d,
// which fails the test.
func runBounded(t *testing.T, bin string, env map[string]string, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("%s still running after %s:\n%s\n%s", bin, d, errOut.String(), out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestS3WithoutCredentials: an S3 target without keys says "no S3
// credentials" at start and names the settings (issue 38 item 9); the
// instance metadata service is asked only when the user asks for it
// (AWS_EC2_METADATA_DISABLED=false), not by default: off EC2 it only
// costs time, and on EC2 a role the user never chose is no login of
// theirs.
func TestS3WithoutCredentials(t *testing.T) {
	t.Parallel()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	for _, tc := range []struct {
		name      string
		env       map[string]string
		wantIMDS  bool
		wantWords []string
	}{
		{"by default", nil, false, []string{"no S3 credentials", "AWS_ACCESS_KEY_ID", "AWS_EC2_METADATA_DISABLED=false"}},
		{"the metadata service asked for", map[string]string{"AWS_EC2_METADATA_DISABLED": "false"}, true, []string{"no S3 credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int64
			imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				asked.Add(1)
				http.NotFound(w, nil)
			}))
			defer imds.Close()
			env := map[string]string{"FETCH_TARGET": "s3://products", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1",
				"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.URL, "HOME": t.TempDir(), "FETCH_ADMIN_ADDR": "127.0.0.1:0",
				"CDSE_USERNAME": user, "CDSE_PASSWORD": password, "NATS_URL": "nats://127.0.0.1:1", "LOG_FORMAT": "text"}
			for k, v := range tc.env {
				env[k] = v
			}
			code, stdout, stderr := runBounded(t, bin, env, 30*time.Second)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.wantWords {
				if !strings.Contains(stderr, w) {
					t.Errorf("no %q in the error:\n%s\n%s", w, stderr, stdout)
				}
			}
			if got := asked.Load() > 0; got != tc.wantIMDS {
				t.Errorf("the metadata service asked: %v, want %v", got, tc.wantIMDS)
			}
		})
	}
}
