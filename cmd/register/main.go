// Command register creates and manages the catalogue subscription that
// feeds the receiver. See `register --help` and README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// CA roots for an image without a system store (make image builds on
	// an empty base); the system's store wins where there is one.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/cdse-jetstream/receiver/internal/register"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := register.Run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
