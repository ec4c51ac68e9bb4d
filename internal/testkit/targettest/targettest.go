// Package targettest holds the tests every target must pass, run by each
// target's package over the real thing (a directory, an S3 server): the
// contract of internal/fetcher/target, checked once for all.
package targettest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// Put stores body at key through Open, Write and Commit, described as s:
// an object as a fetch leaves it.
func Put(t testing.TB, tg target.Target, key string, body []byte, s target.Stored) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up, err := tg.Open(ctx, key, s.Size, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := up.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// Contract stores an object through Open, Write and Commit, and checks
// what Stat and Read say of it, and of a key where nothing is; and what
// DeleteFolder removes.
func Contract(t *testing.T, tg target.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := []byte(`{"type":"Feature","stac_version":"1.1.0"}`)
	sum := md5.Sum(body)
	want := target.Stored{Size: int64(len(body)), MD5: hex.EncodeToString(sum[:]), ProductID: "7f3c0b2e-1a2b-4c5d-8e9f-0a1b2c3d4e5f"}
	const key = "contract/S2B_MSIL2A_20261127T101329_N0511_R022_T32TQM_20261127T121200.SAFE.zip.json"
	Put(t, tg, key, body, want)
	got, ok, err := tg.Stat(ctx, key)
	if err != nil || !ok || got.Size != want.Size || got.MD5 != want.MD5 {
		t.Errorf("Stat: %+v %v %v, want %+v", got, ok, err, want)
	}
	// Described anew (a checksum verified in place): Stat says so.
	described := want
	described.BLAKE3 = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if err := tg.Describe(ctx, key, described); err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if got, ok, err := tg.Stat(ctx, key); err != nil || !ok || got != described {
		t.Errorf("Stat after Describe: %+v %v %v, want %+v", got, ok, err, described)
	}
	if err := tg.Describe(ctx, "contract/nothing-here.zip", described); !errors.Is(err, target.ErrNotStored) {
		t.Errorf("Describe of a key where nothing is: %v, want ErrNotStored", err)
	}
	r, err := tg.Read(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != string(body) {
		t.Errorf("Read: %q %v, want %q", b, err, body)
	}
	if _, err := tg.Read(ctx, "contract/nothing-here.json"); !errors.Is(err, target.ErrNotStored) {
		t.Errorf("Read of a key where nothing is: %v, want ErrNotStored", err)
	}
	if err := tg.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Read(ctx, key); !errors.Is(err, target.ErrNotStored) {
		t.Errorf("Read after Delete: %v, want ErrNotStored", err)
	}
	deleteFolder(ctx, t, tg)
}

// deleteFolder: DeleteFolder removes every object under a folder, at any
// depth, and a partial left there, but no object beside it whose key
// only begins with the folder's text.
func deleteFolder(ctx context.Context, t *testing.T, tg target.Target) {
	t.Helper()
	const folder = "contract/S2B_MSIL2A_20261127T101329_N0511_R022_T32TQM_20261127T121200.SAFE"
	put := func(key string) {
		t.Helper()
		body := []byte(key)
		sum := md5.Sum(body)
		Put(t, tg, key, body, target.Stored{Size: int64(len(body)), MD5: hex.EncodeToString(sum[:]), ProductID: "7f3c0b2e-1a2b-4c5d-8e9f-0a1b2c3d4e5f"})
	}
	inside := []string{folder + "/manifest.safe", folder + "/GRANULE/L2A_T32TQM/IMG_DATA/R10m/T32TQM_B02_10m.jp2"}
	beside := []string{folder + ".zip", folder + ".zip.json", folder + "2/manifest.safe"}
	for _, k := range append(inside, beside...) {
		put(k)
	}
	// A download under the folder cut short: its partial is the folder's.
	cut := folder + "/GRANULE/L2A_T32TQM/IMG_DATA/R10m/T32TQM_B03_10m.jp2"
	up, err := tg.Open(ctx, cut, 10, target.Stored{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write([]byte("part")); err != nil {
		t.Fatal(err)
	}
	if err := up.Abort(true); err != nil {
		t.Fatal(err)
	}
	if err := tg.DeleteFolder(ctx, folder, "manifest.safe"); err != nil {
		t.Fatalf("DeleteFolder: %v", err)
	}
	for _, k := range inside {
		if _, ok, err := tg.Stat(ctx, k); ok || err != nil {
			t.Errorf("%s after DeleteFolder: there %v, %v", k, ok, err)
		}
	}
	if held, _ := tg.Partial(cut); held != 0 {
		t.Errorf("the partial of %s after DeleteFolder: %d bytes", cut, held)
	}
	for _, k := range beside {
		if _, ok, err := tg.Stat(ctx, k); !ok || err != nil {
			t.Errorf("%s, beside the folder, after DeleteFolder: there %v, %v", k, ok, err)
		}
		if err := tg.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.DeleteFolder(ctx, folder, "manifest.safe"); err != nil {
		t.Errorf("DeleteFolder where nothing is: %v", err)
	}
}
