// Command subscribe is the smallest downstream consumer: it prints one line
// per product event stored by the receiver. Run it beside `make run`:
//
//	go run ./examples/subscribe                  # everything
//	go run ./examples/subscribe 'cdse.product.created.SENTINEL-2.>'
//
// A real consumer would use a durable consumer (jetstream.ConsumerConfig with
// a Durable name) and acknowledge each message after processing it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "subscribe:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL // the receiver's embedded server
	}
	subject := "cdse.product.>"
	if len(os.Args) > 1 {
		subject = os.Args[1]
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.OrderedConsumer(ctx, "CDSE_PRODUCTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := m.Headers()
		fmt.Printf("%s %s %s\n", m.Subject(), h.Get("Cdse-Product-Id"), h.Get("Cdse-Product-Name"))
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	<-ctx.Done()
	return nil
}
