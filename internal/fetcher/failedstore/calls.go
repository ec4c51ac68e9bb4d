package failedstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// natsCalls bounds each NATS request of the store, and ends it at once,
// with the server's refusal as its error, when it is one that the login
// may not make (the embedded server's fetcher login may not delete a
// message of FETCH_STREAM): NATS reports a refused request apart, and
// never answers it.
type natsCalls struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc // of the request under way
	stderr io.Writer
	who    string // the NATS user, named with a refusal
	hint   string // what to fix, said with a refusal
}

func (c *natsCalls) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		if strings.Contains(err.Error(), "$JS.API.CONSUMER.DELETE.") {
			return // an ordered consumer's clean-up: the server drops it once idle
		}
		c.mu.Lock()
		cancel := c.cancel
		c.mu.Unlock()
		if cancel != nil {
			// The server names the subject only: who was refused, and
			// the settings that give the fetcher's rights, are ours to
			// say.
			cancel(fmt.Errorf("%w (as NATS user %s): %s", err, c.who, c.hint))
			return
		}
	}
	fmt.Fprintf(c.stderr, "%v\n", err)
}

// call is ctx for one request: callTimeout, or the refusal.
func (c *natsCalls) call(ctx context.Context) (context.Context, func()) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	c.mu.Lock()
	c.cancel = cancelCause
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
		cancelCause(nil)
	}
}

// refused is the server's refusal that ended the request of ctx, else err.
func refused(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, nats.ErrPermissionViolation) {
		return cause
	}
	return err
}
