package logging

import (
	"io"
	"sync"
	"time"
)

// logWriter buffers log lines and writes them out at most FlushAfter after
// the first of them, or sooner when the buffer fills. A line per request
// otherwise costs a write system call per request (3–4 % of the receiver's
// CPU under load); batched, it costs one per interval. The price: a process
// killed outright loses up to that interval of log lines. Notifications are
// not at stake (they are in JetStream before any answer); Run flushes on
// every orderly exit, and the runtime's own crash reports go to stderr,
// unbuffered.
type logWriter struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	after   time.Duration
	limit   int
	pending *time.Timer // armed while buf holds unwritten lines
	err     error       // the last write error, reported once
}

func newLogWriter(w io.Writer, after time.Duration, limit int) *logWriter {
	return &logWriter{w: w, after: after, limit: limit, buf: make([]byte, 0, limit)}
}

// Write takes one formatted line (logrus writes each entry in one call).
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf)+len(p) > l.limit {
		l.flushLocked()
	}
	if len(p) >= l.limit {
		_, err := l.w.Write(p)
		return len(p), err
	}
	l.buf = append(l.buf, p...)
	if l.pending == nil {
		l.pending = time.AfterFunc(l.after, l.Flush)
	}
	err := l.err
	l.err = nil
	return len(p), err
}

// Flush writes out what is buffered.
func (l *logWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *logWriter) flushLocked() {
	if l.pending != nil {
		l.pending.Stop()
		l.pending = nil
	}
	if len(l.buf) == 0 {
		return
	}
	if _, err := l.w.Write(l.buf); err != nil {
		l.err = err
	}
	l.buf = l.buf[:0]
}
