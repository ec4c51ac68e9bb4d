package logging

import (
	"log"
	"strings"

	"github.com/sirupsen/logrus"
)

// StdLog routes net/http's own messages (TLS handshake errors, refused
// connections) through logrus at debug level: on a public endpoint they are
// the internet's noise, not the operator's business.
func StdLog(l logrus.FieldLogger) *log.Logger {
	return log.New(writerFunc(func(p []byte) (int, error) {
		l.WithField("component", "http").Debug(strings.TrimSpace(string(p)))
		return len(p), nil
	}), "", 0)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
