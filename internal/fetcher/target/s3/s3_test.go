package s3

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/targettest"
)

func TestS3OptionsFromEnv(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want Options
		err  string
	}{
		{"s3 endpoint first", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://other", "AWS_REGION": "eu-central-1"},
			Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-central-1"}, ""},
		{"keys from a file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY_FILE": secret},
			Options{AccessKeyID: "id", SecretAccessKey: "from-file"}, ""},
		{"both a key and its file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SECRET_ACCESS_KEY_FILE": secret}, Options{}, "both"},
		{"half a key", map[string]string{"AWS_ACCESS_KEY_ID": "id"}, Options{}, "together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OptionsFromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "from-file") {
					t.Error("the secret in the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != tt.want.Endpoint || got.Region != tt.want.Region || got.AccessKeyID != tt.want.AccessKeyID ||
				got.SecretAccessKey != tt.want.SecretAccessKey || (got.PathStyle == nil) != (tt.want.PathStyle == nil) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestS3PartSize: the configured part for what fits in 9 000 of them, a
// larger one (whole MiB) for a product that would need more; 10 000 is
// S3's limit of parts.
func TestS3PartSize(t *testing.T) {
	tg := &Target{part: 5 << 20}
	for _, tt := range []struct{ size, want int64 }{
		{0, 5 << 20}, {1, 5 << 20}, {9000 * 5 << 20, 5 << 20},
		{9000*5<<20 + 1, 6 << 20}, {100 << 30, 12 << 20},
	} {
		got := tg.partSize(tt.size)
		if got != tt.want || (tt.size > 0 && (tt.size+got-1)/got > 10000) {
			t.Errorf("partSize(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

// TestProbeS3: a missing bucket passes a lookup (a HEAD there is a plain
// 404) but fails the probe write, which names the cause; in the bucket
// the probe leaves nothing behind.
func TestProbeS3(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	missing := s3Target(ctx, t, &s3test.Server{Endpoint: s.Endpoint, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Bucket: "no-such-bucket"}, "p")
	if _, _, err := missing.Stat(ctx, "x.zip"); err != nil {
		t.Logf("a lookup in a missing bucket: %v", err)
	}
	if err := missing.Probe(ctx); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("probe of a missing bucket: %v", err)
	}
	tgt := s3Target(ctx, t, s, "p")
	if err := tgt.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	out, err := tgt.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("the probe left %d objects", len(out.Contents))
	}
}

// s3Target is the target s3://<the store's bucket>/<prefix> with the
// store's keys, 5 MiB parts, and nothing read from a developer's ~/.aws.
func s3Target(ctx context.Context, t *testing.T, s *s3test.Server, prefix string) *Target {
	t.Helper()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := s.Env()
	so, err := OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	so.PartSize = 5 << 20
	tgt, err := New(ctx, s.Bucket, prefix, so)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func TestContract(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	targettest.Contract(t, s3Target(ctx, t, s, "products"))
}

// frontOf is an S3-compatible endpoint in front of the store s, passing
// every request on except those refuse answers (status, S3 error code;
// status 0 passes it), as a store with other rules would; deletes records
// what each delete request asked to remove, in order.
type frontOf struct {
	*s3test.Server
	mu      sync.Mutex
	deletes [][]string
	refuse  func(r *http.Request, n int) (int, string) // n: the delete requests before this one
}

// requests are the delete requests so far.
func (f *frontOf) requests() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletes)
}

func newFront(t *testing.T, s *s3test.Server, refuse func(*http.Request, int) (int, string)) *frontOf {
	t.Helper()
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	f := &frontOf{refuse: refuse}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, multi := r.URL.Query()["delete"]
		if r.Method == http.MethodDelete || (r.Method == http.MethodPost && multi) {
			var keys []string
			if multi {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				var d struct {
					Object []struct{ Key string }
				}
				_ = xml.Unmarshal(body, &d)
				for _, o := range d.Object {
					keys = append(keys, o.Key)
				}
			} else {
				keys = []string{strings.TrimPrefix(r.URL.Path, "/"+s.Bucket+"/")}
			}
			f.mu.Lock()
			n := len(f.deletes)
			f.deletes = append(f.deletes, keys)
			f.mu.Unlock()
			if status, code := f.refuse(r, n); status != 0 {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(status)
				fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>refused by the test's front</Message></Error>", code)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.Server = &s3test.Server{Endpoint: srv.URL, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Bucket: s.Bucket}
	return f
}

// TestDeleteFolderRemovesItsManifestLast: the S3 target removes the
// folder's objects but the one named last, then that one (the manifest,
// by which the folder is found): a removal cut between (the store
// refusing the second delete request) leaves it.
func TestDeleteFolderRemovesItsManifestLast(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	front := newFront(t, s, func(_ *http.Request, n int) (int, string) {
		if n > 0 {
			return http.StatusServiceUnavailable, "SlowDown"
		}
		return 0, ""
	})
	tgt := s3Target(ctx, t, front.Server, "p")
	const folder = "S1/S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_95E7.SAFE"
	for _, k := range []string{"annotation/a.xml", "manifest.safe", "measurement/m.tiff", "preview/p.png"} {
		if _, err := s.Client().PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("p/" + folder + "/" + k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tgt.DeleteFolder(ctx, folder, "manifest.safe"); err == nil {
		t.Errorf("DeleteFolder with its second delete refused: no error (delete requests %v)", front.requests())
	}
	out, err := s.Client().ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range out.Contents {
		left = append(left, aws.ToString(o.Key))
	}
	if want := []string{"p/" + folder + "/manifest.safe"}; !slices.Equal(left, want) {
		t.Errorf("left after a removal cut midway: %v, want %v (delete requests %v)", left, want, front.requests())
	}
}

// TestDeleteFolderWithoutDeleteObjects: a store that refuses
// DeleteObjects (the SDK sends a CRC32 checksum where older MinIO, Ceph
// RGW or OCI want Content-MD5: 400 MissingContentMD5; or does not have
// it) has the folder removed one DeleteObject per key, the manifest
// last, and is not asked for DeleteObjects again; a refusal of another
// kind (access denied) is the error it is.
func TestDeleteFolderWithoutDeleteObjects(t *testing.T) {
	s := s3test.Start(t)
	const folder = "S1/S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1_95E7.SAFE"
	for i, tc := range []struct {
		status   int
		code     string
		fallback bool
	}{
		{http.StatusBadRequest, "MissingContentMD5", true},
		{http.StatusBadRequest, "InvalidRequest", true},
		{http.StatusNotImplemented, "NotImplemented", true},
		{http.StatusForbidden, "AccessDenied", false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			front := newFront(t, s, func(r *http.Request, _ int) (int, string) {
				if _, multi := r.URL.Query()["delete"]; multi {
					return tc.status, tc.code
				}
				return 0, ""
			})
			prefix := fmt.Sprint("p", i)
			tgt := s3Target(ctx, t, front.Server, prefix)
			for round := range 2 {
				keys := []string{"annotation/a.xml", "manifest.safe", "measurement/m.tiff"}
				for _, k := range keys {
					if _, err := s.Client().PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String(prefix + "/" + folder + "/" + k), Body: strings.NewReader("x")}); err != nil {
						t.Fatal(err)
					}
				}
				before := len(front.requests())
				err := tgt.DeleteFolder(ctx, folder, "manifest.safe")
				reqs := front.requests()[before:]
				if !tc.fallback {
					if err == nil || !strings.Contains(err.Error(), tc.code) {
						t.Errorf("DeleteFolder refused %s: %v, want the error", tc.code, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("round %d: DeleteFolder with DeleteObjects refused (%s): %v (requests %v)", round, tc.code, err, reqs)
				}
				out, err := s.Client().ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket, Prefix: aws.String(prefix + "/")})
				if err != nil || len(out.Contents) != 0 {
					t.Errorf("round %d: %d objects left, %v", round, len(out.Contents), err)
				}
				// One key a request once refused; the manifest last.
				singles := reqs
				if round == 0 {
					singles = reqs[1:]
				}
				if len(singles) != len(keys) || !slices.Equal(singles[len(singles)-1], []string{prefix + "/" + folder + "/manifest.safe"}) {
					t.Errorf("round %d: delete requests %v, want one per key, the manifest last", round, reqs)
				}
			}
		})
	}
}

// TestHungStoreIsBounded: a store that takes the connection and never
// answers (nor reads) must not hold an upload for ever: a write that
// cannot go on for the stall bound fails, and the abort that follows
// returns; the download is then given back (the fetch's retries) instead
// of holding its slot while the message's heartbeat keeps it.
func TestHungStoreIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	old := stallTimeout
	stallTimeout = 500 * time.Millisecond
	t.Cleanup(func() { stallTimeout = old })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg, err := New(ctx, "products", "", Options{Endpoint: "http://" + ln.Addr().String(), Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	up, err := tg.Open(ctx, "p.zip", 64<<20, target.Stored{ProductID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	buf := make([]byte, 256<<10)
	var werr error
	for i := 0; i < 256 && werr == nil && ctx.Err() == nil; i++ { // 64 MiB at most
		_, werr = up.Write(buf)
	}
	if werr == nil {
		t.Fatalf("64 MiB written to a store that reads nothing, in %v", time.Since(start))
	}
	aborted := make(chan error, 1)
	go func() { aborted <- up.Abort(false) }()
	select {
	case <-aborted:
	case <-ctx.Done():
		t.Fatal("the abort of an upload to a hung store did not return")
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the hung store held the upload %v", took)
	}
}
