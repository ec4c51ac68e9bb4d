// Package logging is the receiver's log: JSON lines by default, written by
// a formatter that gives what logrus.JSONFormatter would without its
// reflection, batched into few write system calls, with the webhook's line
// per request written directly, and net/http's own messages at debug level.
// (Each of these was measured on the request path: see the comments.)
package logging

import (
	"io"
	"time"

	"github.com/sirupsen/logrus"
)

// FlushAfter bounds how long a line waits in the batching writer.
const FlushAfter = 100 * time.Millisecond

// New returns a logger writing lines of format ("json" or "text") at level
// and above to w, unbuffered (the one-shot commands' log).
func New(level, format string, w io.Writer) *logrus.Logger {
	log := logrus.New()
	log.SetOutput(w)
	if format == "text" {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	} else {
		log.SetFormatter(jsonFormatter{})
	}
	if lvl, err := logrus.ParseLevel(level); err == nil {
		log.SetLevel(lvl)
	}
	return log
}

// NewBatched is New through a batching writer (the server's log, a line
// per request): lines reach w at most FlushAfter after they are logged.
// flush writes out what is buffered; call it before the process exits.
func NewBatched(level, format string, w io.Writer) (log *logrus.Logger, flush func()) {
	lw := newLogWriter(w, FlushAfter, 64<<10)
	return New(level, format, lw), lw.Flush
}

// RequestLogger is the webhook's writer of its line per request for l: the
// direct writer when l is New's JSON logger on the batching writer (which
// is safe for writes that bypass logrus's lock, and copies what it is
// given), nil otherwise (the webhook then logs through l).
func RequestLogger(l logrus.FieldLogger) RequestLog {
	lg, ok := l.(*logrus.Logger)
	if !ok {
		return nil
	}
	_, ourFormat := lg.Formatter.(jsonFormatter)
	lw, ourWriter := lg.Out.(*logWriter)
	if !ourFormat || !ourWriter {
		return nil
	}
	return requestLineWriter{log: lg, out: lw}
}
