// Command receiver turns the catalogue's PUSH notifications into a
// deduplicated NATS JetStream feed. See README.md; `receiver --help` lists
// every setting.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// CA roots for an image without a system store (make image builds on
	// an empty base); the system's store wins where there is one.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/cdse-jetstream/receiver/internal/receiver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := receiver.Run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
