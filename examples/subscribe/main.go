// Command subscribe is the smallest downstream consumer: it prints one line
// per product event stored by the receiver, decoded with the public event
// package. Run it beside `make run`:
//
//	go run ./examples/subscribe                                   # everything
//	go run ./examples/subscribe -collection SENTINEL-2 -product-type S2MSI2A
//	go run ./examples/subscribe -subject 'cdse.product.deleted.>'
//
// It reads with an ordered consumer, which keeps no state on the server. A
// service that must not miss an event uses a durable consumer
// (jetstream.ConsumerConfig with a Durable name) and acknowledges each
// message after processing it; see the README's "Consume it".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "subscribe:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var f event.Filter
	var subject, stream string
	flag.StringVar((*string)(&f.Event), "event", "", "created, modified or deleted (default any)")
	flag.StringVar(&f.Collection, "collection", "", "e.g. SENTINEL-2 (default any)")
	flag.StringVar(&f.ProductType, "product-type", "", "e.g. S2MSI2A (default any)")
	flag.StringVar(&f.Prefix, "prefix", os.Getenv("NATS_SUBJECT_PREFIX"), "the receiver's NATS_SUBJECT_PREFIX")
	flag.StringVar(&f.Interest, "interest", "", "a named interest of the receiver's INTERESTS_FILE: its copies instead of the product subjects")
	flag.StringVar(&f.InterestPrefix, "interest-prefix", os.Getenv("INTEREST_SUBJECT_PREFIX"), "the receiver's INTEREST_SUBJECT_PREFIX")
	flag.StringVar(&subject, "subject", "", "a filter subject of your own instead of the three above")
	flag.StringVar(&stream, "stream", event.DefaultStream, "the receiver's NATS_STREAM")
	version := flag.Bool("version", false, "print the version and exit (every binary of the project answers --version)")
	flag.Parse()
	if *version {
		fmt.Println(buildinfo.Get().String("subscribe"))
		return nil
	}
	if subject == "" {
		var err error
		if subject, err = f.Subject(); err != nil {
			return err
		}
	}
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL // the receiver's embedded server
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
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		n, err := event.Decode(m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "subscribe: %s: %v\n", m.Subject(), err)
			return
		}
		if n.Interest != "" {
			fmt.Printf("[%s] ", n.Interest)
		}
		fmt.Printf("%s %s %s %s %s %s\n", n.Event, n.ProductType, n.ProductID, n.ProductName, n.S3Path, n.DownloadURL)
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	<-ctx.Done()
	return nil
}
