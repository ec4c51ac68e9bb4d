package s3test_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

const (
	mib      = 1 << 20
	partSize = 5 * mib // S3's smallest part
	// objectSize makes three parts, the last one short.
	objectSize = 11*mib + 123
)

// recorder is an HTTP transport that notes every request, to see the
// addressing style and the parts sent.
type recorder struct {
	mu   sync.Mutex
	reqs []*url.URL
	meth []string
	next http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.URL)
	r.meth = append(r.meth, req.Method)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// awsEnv configures the SDK only the AWS way, through the variables the
// fetcher reads, isolated from the machine's ~/.aws and IMDS. The general
// AWS_ENDPOINT_URL points at a closed port: the S3 one must win.
func awsEnv(t *testing.T, s *s3test.Server) {
	dir := t.TempDir()
	for k, v := range s.Env() {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	// A CA bundle (set on some machines) makes the SDK refuse a client
	// of ours (envClient's recorder) it cannot add the roots to; the
	// store speaks plain HTTP anyway. The fetcher, which takes the SDK's
	// own client, keeps the bundle.
	t.Setenv("AWS_CA_BUNDLE", "")
}

// envClient is the client the fetcher would build: the SDK's default
// chain from the environment, path-style (the endpoint is an IP).
func envClient(t *testing.T, rec *recorder) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		// A multipart object's checksum is one of its parts' checksums,
		// which GetObject cannot check (the SDK would log so each time);
		// the fetcher's own checksums travel as metadata.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// unknownLength hides the reader's type: the uploader cannot seek it
// nor know its length, as with a product streamed from the catalogue.
type unknownLength struct{ r io.Reader }

func (u unknownLength) Read(p []byte) (int, error) { return u.r.Read(p) }

func content(n int) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{31})
	rng.Read(b)
	return b
}

func TestMultipartUploadWithMetadata(t *testing.T) {
	s := s3test.Start(t)
	awsEnv(t, s)
	rec := &recorder{next: http.DefaultTransport}
	c := envClient(t, rec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	data := content(objectSize)
	md5sum := md5.Sum(data)
	meta := map[string]string{
		"md5":        hex.EncodeToString(md5sum[:]),
		"blake3":     "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262", // BLAKE3 of "": a value of the catalogue's form
		"product-id": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
	}
	key := "prefix/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE.zip"
	up := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes = partSize
		o.MultipartUploadThreshold = partSize
		o.Concurrency = 2
	})
	out, err := up.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket:   aws.String(s.Bucket),
		Key:      aws.String(key),
		Body:     unknownLength{bytes.NewReader(data)},
		Metadata: meta,
	})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if aws.ToString(out.UploadID) == "" || len(out.CompletedParts) != 3 {
		t.Fatalf("not a multipart upload of 3 parts: upload id %q, %d parts", aws.ToString(out.UploadID), len(out.CompletedParts))
	}

	// Path-style on 127.0.0.1: the bucket is the path's first segment,
	// the host the endpoint's; the general endpoint was never asked.
	parts := 0
	rec.mu.Lock()
	for i, u := range rec.reqs {
		if "http://"+u.Host != s.Endpoint || !strings.HasPrefix(u.Path, "/"+s.Bucket+"/") {
			t.Errorf("%s %s: not path-style on %s", rec.meth[i], u, s.Endpoint)
		}
		if rec.meth[i] == http.MethodPut && u.Query().Has("partNumber") {
			parts++
		}
	}
	rec.mu.Unlock()
	if parts != 3 {
		t.Errorf("%d UploadPart requests, want 3", parts)
	}

	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt64(head.ContentLength) != objectSize {
		t.Errorf("length %d, want %d", aws.ToInt64(head.ContentLength), objectSize)
	}
	for k, v := range meta {
		if head.Metadata[k] != v {
			t.Errorf("x-amz-meta-%s = %q, want %q (all: %v)", k, head.Metadata[k], v, head.Metadata)
		}
	}
	// A multipart ETag is the MD5 of the parts' MD5s with a -count: never
	// the object's MD5, which is why the checksums travel as metadata.
	if etag := aws.ToString(head.ETag); !strings.HasSuffix(etag, `-3"`) {
		t.Errorf("ETag %s: not a multipart ETag of 3 parts", etag)
	}

	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, got.Body); err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Error("the object read back differs from the one sent")
	}
	// What the posix backend keeps: the object as a plain file.
	if fi, err := os.Stat(filepath.Join(s.Root, s.Bucket, key)); err != nil || fi.Size() != objectSize {
		t.Errorf("the object's file: %v, %v", fi, err)
	}
}

// An upload in progress is listed (with when it began: a sweep of stale
// ones decides on that), is no object, and is gone once aborted.
func TestListAndAbortMultipartUpload(t *testing.T) {
	s := s3test.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bucket, key := aws.String(s.Bucket), aws.String("prefix/unfinished.zip")

	before := time.Now().Add(-time.Minute)
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: bucket, Key: key, Metadata: map[string]string{"product-id": "p1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(1),
		Body: bytes.NewReader(content(partSize)),
	}); err != nil {
		t.Fatal(err)
	}

	var nf *types.NotFound
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: key}); !errors.As(err, &nf) {
		t.Fatalf("HEAD of an unfinished upload: %v, want NotFound (an object appears only whole)", err)
	}

	list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bucket, Prefix: aws.String("prefix/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Uploads) != 1 {
		t.Fatalf("%d uploads listed, want 1", len(list.Uploads))
	}
	u := list.Uploads[0]
	if aws.ToString(u.UploadId) != aws.ToString(mp.UploadId) || aws.ToString(u.Key) != aws.ToString(key) {
		t.Errorf("listed %s %s, want %s %s", aws.ToString(u.Key), aws.ToString(u.UploadId), aws.ToString(key), aws.ToString(mp.UploadId))
	}
	if u.Initiated == nil || u.Initiated.Before(before) || u.Initiated.After(time.Now().Add(time.Minute)) {
		t.Errorf("initiated %v: not about now", u.Initiated)
	}

	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: bucket, Key: key, UploadId: mp.UploadId}); err != nil {
		t.Fatal(err)
	}
	list, err = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Uploads) != 0 {
		t.Errorf("after abort, %d uploads listed", len(list.Uploads))
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: key}); !errors.As(err, &nf) {
		t.Errorf("HEAD after abort: %v, want NotFound", err)
	}
}

// failingReader gives n bytes, then fails, as a download cut short.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("the download broke off")
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// A stream that breaks in the middle leaves nothing: the uploader aborts
// its multipart upload, and no object appears.
func TestFailedUploadIsAborted(t *testing.T) {
	s := s3test.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes = partSize
		o.MultipartUploadThreshold = partSize
		o.Concurrency = 2
		o.FailTimeout = 10 * time.Second // the abort runs even when ctx is what ended the upload
	})
	key := aws.String("prefix/broken.zip")
	_, err := up.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket: aws.String(s.Bucket), Key: key,
		Body: &failingReader{r: bytes.NewReader(content(objectSize)), n: 2*partSize + mib},
	})
	if err == nil || !strings.Contains(err.Error(), "the download broke off") {
		t.Fatalf("upload of a broken stream: %v", err)
	}
	list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Uploads) != 0 {
		t.Errorf("%d multipart uploads left after a failed upload", len(list.Uploads))
	}
	var nf *types.NotFound
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: key}); !errors.As(err, &nf) {
		t.Errorf("HEAD after a failed upload: %v, want NotFound", err)
	}
}

// Kill takes the store down (connections refused); Restart brings it back
// on the same endpoint with its objects.
func TestKillRestart(t *testing.T) {
	s := s3test.Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("kept"), Body: strings.NewReader("kept")}
	if _, err := c.PutObject(ctx, in); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	// One attempt: the SDK would retry a refused connection.
	_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("kept")},
		func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("HEAD with the store down: %v, want connection refused", err)
	}
	s.Restart(t)
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("kept")})
	if err != nil {
		t.Fatalf("HEAD after restart: %v\n%s", err, s.Output())
	}
	if n := aws.ToInt64(head.ContentLength); n != 4 {
		t.Errorf("length %d after restart", n)
	}
}
