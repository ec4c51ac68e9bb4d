package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBehind starts the writeback of f's bytes [off, off+n) without
// waiting for it (sync_file_range, SYNC_FILE_RANGE_WRITE): durability is
// still the commit's fsync, which then finds little left to write. An
// error only loses the head start.
func writeBehind(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
