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
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
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
		if errors.Is(err, event.ErrNotice) {
			// A notice of the receiver's (a product superseded by a newer
			// version: event.DecodeSuperseded reads it), on the stream
			// beside the product events: a -subject wider than the
			// product subjects takes them. Not a product event: skipped.
			return
		}
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
	// Say what it listens on: a subscriber that waits in silence on a
	// misspelt interest or collection looks like a receiver that stores
	// nothing.
	fmt.Fprintf(os.Stderr, "subscribe: listening on %s (stream %s at %s); Ctrl-C to stop\n", subject, stream, url)
	if w := nothingYet(ctx, js, stream, subject, f); w != "" {
		fmt.Fprintln(os.Stderr, "subscribe: warning:", w)
	}
	<-ctx.Done()
	return nil
}

// nothingYet says, when no message on the stream matches subject, what
// does: the interests with messages, or some subjects that have them. Names
// are case-sensitive (SENTINEL-2, not sentinel-2), and a new interest has
// messages only from its first match on, so it is a warning, not an error.
func nothingYet(ctx context.Context, js jetstream.JetStream, stream, subject string, f event.Filter) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Sprintf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil || len(info.State.Subjects) > 0 {
		return ""
	}
	broader, what := event.DefaultPrefix, "subjects with messages"
	if f.Prefix != "" {
		broader = f.Prefix
	}
	if f.Interest != "" {
		broader, what = event.DefaultInterestPrefix, "interests with messages"
		if f.InterestPrefix != "" {
			broader = f.InterestPrefix
		}
	}
	if info, err = s.Info(ctx, jetstream.WithSubjectFilter(broader+".>")); err != nil {
		return ""
	}
	seen := map[string]bool{}
	for subj := range info.State.Subjects {
		if f.Interest != "" {
			subj, _, _ = strings.Cut(strings.TrimPrefix(subj, broader+"."), ".")
		}
		seen[subj] = true
	}
	names := slices.Sorted(maps.Keys(seen))
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	if len(names) == 0 {
		names = []string{"none yet"}
	}
	return fmt.Sprintf("nothing on the stream matches %s yet (names are case-sensitive); %s: %s", subject, what, strings.Join(names, ", "))
}
