package fetch

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// storedUnverified says whether s is p's object stored without a checksum
// (the catalogue had none when it was fetched), now that sums are known:
// the catalogue can publish a product before its checksum and add it in a
// later modified event (ChecksumDate after PublicationDate).
func storedUnverified(s target.Stored, p Product, sums map[string]string) bool {
	return len(sums) > 0 && s.MD5 == "" && s.BLAKE3 == "" && s.ProductID == p.ID &&
		(p.ContentLength <= 0 || s.Size == p.ContentLength)
}

// verifyInPlace reads the object stored at key back from the target and
// checks it against sums: the account's bytes are not spent again. When
// it matches, the target records the checksums beside it; a mismatch is a
// *mismatch (the caller downloads it again).
//
// The read-back is bounded as a download is: cut after IdleTimeout with no
// byte (a stalled S3 GET would otherwise hold the download slot, and the
// message's heartbeat keeps it from being redelivered).
func (f *Fetcher) verifyInPlace(ctx context.Context, p Product, key string, s target.Stored, sums map[string]string) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(f.o.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	r, err := f.target.Read(rctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	h := newHashes()
	buf := make([]byte, 256<<10)
	n, err := io.CopyBuffer(h, &progressReader{r: r, every: time.Hour, progress: func() {}, last: time.Now(), idle: idle, idleFor: f.o.IdleTimeout}, buf)
	if err != nil {
		if context.Cause(rctx) == errIdle && ctx.Err() == nil {
			return fmt.Errorf("reading %s back: no byte for %v", f.target.URL(key), f.o.IdleTimeout)
		}
		return fmt.Errorf("reading %s back: %w", f.target.URL(key), err)
	}
	if n != s.Size {
		return fmt.Errorf("reading %s back: %d bytes, the target says %d", f.target.URL(key), n, s.Size)
	}
	got := h.sums()
	for alg, want := range sums {
		if got[alg] != want {
			return &mismatch{alg: alg, want: want, got: got[alg]}
		}
	}
	return f.target.Describe(ctx, key, stored(p.ID, s.Size, sums))
}
