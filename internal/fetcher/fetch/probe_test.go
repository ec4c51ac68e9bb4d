package fetch

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/internal/testkit/mountns"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

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
	out, err := tgt.(*S3Target).client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("the probe left %d objects", len(out.Contents))
	}
}

// TestProbeDirectory: a directory the fetcher cannot write to (a
// read-only file system: root passes permission bits) fails the probe;
// a missing directory is never created, and the error says how to.
func TestProbeDirectory(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "1m")
	if !here {
		return
	}
	tgt, err := NewFileTarget(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tgt.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if err := tgt.Probe(ctx); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("probe of a read-only directory: %v", err)
	}
	gone := filepath.Join(t.TempDir(), "products")
	if _, err := NewFileTarget(gone, 0); err == nil || !strings.Contains(err.Error(), "install -d -o ") || !strings.Contains(err.Error(), gone) {
		t.Errorf("a missing directory: %v", err)
	}
}
