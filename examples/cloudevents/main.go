// Command cloudevents reads the receiver's stream as CloudEvents with the
// CloudEvents Go SDK (github.com/cloudevents/sdk-go): each stored message is
// a CloudEvent in the NATS binding's binary content mode, its data the
// catalogue's notification. It prints one line per event:
//
//	go run . -subject 'cdse.product.created.SENTINEL-2.>'
//
// It lives in a module of its own so that the receiver does not depend on
// the SDK.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	subject := flag.String("subject", event.DefaultPrefix+".>", "filter subject")
	stream := flag.String("stream", event.DefaultStream, "the receiver's NATS_STREAM")
	count := flag.Int("n", 0, "stop after this many events (0: run until interrupted)")
	flag.Parse()
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	if err := run(ctx, url, *stream, *subject, *count, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cloudevents:", err)
		os.Exit(1)
	}
}

// run prints each event of stream on subject as "type id source subject
// time datacontenttype S3Path", the S3 path read from the event's data; it
// stops after n events (0: when ctx ends).
func run(ctx context.Context, url, stream, subject string, n int, out io.Writer) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err
	}
	return consume(ctx, cons, n, func(ev cloudevents.Event) error {
		var data struct{ Value struct{ S3Path string } }
		if err := ev.DataAs(&data); err != nil {
			return fmt.Errorf("%s: data: %w", ev.ID(), err)
		}
		_, err := fmt.Fprintln(out, ev.Type(), ev.ID(), ev.Source(), ev.Subject(), ev.Time().UTC().Format(time.RFC3339Nano), ev.DataContentType(), data.Value.S3Path)
		return err
	})
}

// consume hands n events (0: until ctx ends) to fn, each read by sdk-go
// from a stored message and validated by it.
func consume(ctx context.Context, cons jetstream.Consumer, n int, fn func(cloudevents.Event) error) error {
	for i := 0; n == 0 || i < n; i++ {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil && n == 0 {
				return nil
			}
			return err
		}
		ev, err := binding.ToEvent(ctx, newMessage(m))
		if err != nil {
			return fmt.Errorf("%s: not a CloudEvent: %w", m.Subject(), err)
		}
		if err := ev.Validate(); err != nil {
			return fmt.Errorf("%s: invalid CloudEvent: %w", m.Subject(), err)
		}
		if err := fn(*ev); err != nil {
			return err
		}
	}
	return nil
}
