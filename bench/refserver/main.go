// Command refserver is the benchmark's reference pipeline: the least a
// webhook must do. Mode "bare" checks Basic auth, reads the body and answers
// 204; mode "jetstream" also publishes the body to JetStream and waits for
// the PubAck before answering. The receiver's throughput is compared to it.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "refserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	mode := flag.String("mode", "bare", "bare or jetstream")
	natsURL := flag.String("nats", nats.DefaultURL, "NATS URL (jetstream mode)")
	subject := flag.String("subject", "bench.ref.created", "subject (jetstream mode)")
	flag.Parse()
	user, pass := os.Getenv("REF_USER"), os.Getenv("REF_PASSWORD")
	wantU, wantP := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))

	var js jetstream.JetStream
	if *mode == "jetstream" {
		nc, err := nats.Connect(*natsURL)
		if err != nil {
			return err
		}
		defer nc.Close()
		if js, err = jetstream.New(nc); err != nil {
			return err
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		gu, gp := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		if !ok || subtle.ConstantTimeCompare(gu[:], wantU[:])&subtle.ConstantTimeCompare(gp[:], wantP[:]) != 1 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if js != nil {
			pctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			_, err := js.Publish(pctx, *subject, body)
			cancel()
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
