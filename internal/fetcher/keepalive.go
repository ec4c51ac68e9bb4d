package fetcher

import (
	"context"
	"time"
)

// keepAlive is the loop a download's keepers share (the lease's renewal,
// the message's heartbeat): every `every`, while ctx lasts, one try
// bounded by every. It returns the cause to cut the download with, or nil
// once ctx ends. When no try has succeeded for lapse (the process frozen,
// or what is kept out of reach), it stops with lapsed(since); after a
// failed try, failed(err, since) says whether to stop (its cause) or go
// on (nil). since is the time since the last success, or the start.
func keepAlive(ctx context.Context, every, lapse time.Duration, try func(context.Context) error,
	lapsed func(since time.Duration) error, failed func(err error, since time.Duration) error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if since := time.Since(lastOK); since >= lapse {
			return lapsed(since)
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		err := try(rctx)
		cancel()
		switch {
		case err == nil:
			lastOK = time.Now()
		case ctx.Err() != nil:
			return nil
		default:
			if cause := failed(err, time.Since(lastOK)); cause != nil {
				return cause
			}
		}
	}
}
