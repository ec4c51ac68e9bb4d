package event_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

// A consumer of Sentinel-2 L2A products asks JetStream for their subject
// only; it never receives the rest.
func ExampleFilter_Subject() {
	subject, err := event.Filter{Event: event.Created, Collection: "SENTINEL-2", ProductType: "S2MSI2A"}.Subject()
	if err != nil {
		panic(err)
	}
	fmt.Println(subject)

	// Every event of one tile, with a receiver started with
	// NATS_SUBJECT_TEMPLATE=event.collection.tileId.
	subject, err = event.Filter{Template: "event.collection.tileId", TileID: "32TQM"}.Subject()
	if err != nil {
		panic(err)
	}
	fmt.Println(subject)
	// Output:
	// cdse.product.created.SENTINEL-2.S2MSI2A
	// cdse.product.*.*.32TQM
}

// DecodeData reads a message's data and headers; with a jetstream.Msg, call
// event.Decode(msg).
func ExampleDecodeData() {
	data := []byte(`{
	  "SubscriptionEvent": "created",
	  "ProductId": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
	  "ProductName": "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
	  "NotificationDate": "2026-11-21T13:55:20.404Z",
	  "value": {
	    "S3Path": "/eodata/Sentinel-2/MSI/L2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
	    "Attributes": [
	      {"Name": "productType", "Value": "S2MSI2A", "ValueType": "String"},
	      {"Name": "cloudCover", "Value": 12.5, "ValueType": "Double"}
	    ]
	  }
	}`)
	h := nats.Header{}
	h.Set(event.HeaderMsgID, "created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f")
	h.Set(event.HeaderDownloadURL, "https://catalogue.dataspace.copernicus.eu/odata/v1/Products(0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f)/$value")

	n, err := event.DecodeData(data, h)
	if err != nil {
		panic(err)
	}
	cloud, _ := n.Float("cloudCover")
	fmt.Println(n.Event, n.ProductType, n.ProductName)
	fmt.Println(n.S3Path)
	fmt.Println(n.DownloadURL)
	fmt.Println("cloud cover", cloud, "id", n.ID)
	// Output:
	// created S2MSI2A S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE
	// /eodata/Sentinel-2/MSI/L2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE
	// https://catalogue.dataspace.copernicus.eu/odata/v1/Products(0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f)/$value
	// cloud cover 12.5 id created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f
}

// A consumer of the whole product stream (no filter, or one wider than
// the product subjects) meets the receiver's notices of supersession beside
// the product events: Decode answers ErrNotice for them, to ack and skip,
// or to read with DecodeSuperseded. With a jetstream.Msg, call
// event.Decode(msg) and event.DecodeSuperseded(msg).
func ExampleDecodeSupersededData() {
	h := nats.Header{}
	h.Set(event.HeaderNotice, event.NoticeSuperseded)
	for _, m := range []*nats.Msg{
		{Subject: "cdse.product.created.SENTINEL-2.S2MSI1C", Data: []byte(`{"SubscriptionEvent": "created",
		  "ProductId": "8a1b2c3d-0000-4000-8000-000000000002",
		  "ProductName": "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"}`)},
		{Subject: "cdse.superseded.SENTINEL-2.S2MSI1C", Header: h, Data: []byte(`{"notice": "superseded", "reason": "newer_arrived",
		  "acquisition": "S2A_MSIL1C_20150704T101006_R022_T32TPS",
		  "superseded": {"id": "8a1b2c3d-0000-4000-8000-000000000001", "name": "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE", "version": "N0204"},
		  "by": {"id": "8a1b2c3d-0000-4000-8000-000000000002", "name": "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE", "version": "N0500"}}`)},
	} {
		n, err := event.DecodeData(m.Data, m.Header)
		if errors.Is(err, event.ErrNotice) {
			s, err := event.DecodeSupersededData(m.Data, m.Header)
			if err != nil {
				panic(err)
			}
			fmt.Println(s.Superseded.Version, "superseded by", s.By.Version, "("+s.Reason+")")
			continue // a consumer that wants product events only: ack and go on
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(n.Event, n.ProductName)
	}
	// Output:
	// created S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE
	// N0204 superseded by N0500 (newer_arrived)
}

// A pipeline that needs the files waits for the fetcher's events, not for
// the notifications: when a fetched event arrives, the object is in place.
// It consumes the fetched subjects of its products from the fetcher's
// stream; with a jetstream.Msg, it calls event.DecodeFetched(msg). Here one
// message is built by hand as the fetcher publishes it.
func ExampleDecodeFetchedData() {
	subject, err := event.Filter{Prefix: event.DefaultFetchedPrefix, Event: event.Created, Collection: "SENTINEL-2", ProductType: "S2MSI2A"}.Subject()
	if err != nil {
		panic(err)
	}
	fmt.Println("consume", subject, "from", event.DefaultFetchedStream)

	m := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: []byte(`{
	  "SubscriptionEvent": "created",
	  "ProductId": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
	  "ProductName": "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE",
	  "value": {"Attributes": [{"Name": "productType", "Value": "S2MSI2A", "ValueType": "String"}]}
	}`)}
	m.Header.Set(event.HeaderCollection, "SENTINEL-2")
	m.Header.Set(event.HeaderObjectURL, "s3://products/SENTINEL-2/S2MSI2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE.zip")
	m.Header.Set(event.HeaderObjectSize, "1132462080")
	m.Header.Set(event.HeaderChecksumPrefix+"MD5", "9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b")
	m.Header.Set(event.HeaderFetchTook, "41.237s")

	f, err := event.DecodeFetchedData(m.Data, m.Header)
	if err != nil {
		panic(err) // a consumer logs it and terminates the message
	}
	if f.Deleted {
		return // the product was removed from the target (FETCH_ON_DELETE=delete)
	}
	if !f.Verified() {
		fmt.Println("stored unverified:", f.Unverified)
	}
	fmt.Println(f.Event, f.Collection, f.ProductType, f.ProductName)
	fmt.Println(f.ObjectURL)
	fmt.Println(f.Size, "bytes, MD5", f.Checksums["MD5"], "in", f.Took)
	// Output:
	// consume cdse.fetched.created.SENTINEL-2.S2MSI2A from CDSE_FETCHED
	// created SENTINEL-2 S2MSI2A S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE
	// s3://products/SENTINEL-2/S2MSI2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE.zip
	// 1132462080 bytes, MD5 9f1a4c0c2d7b6e0f3a8b1c2d3e4f5a6b in 41.237s
}

// A failed event is a product event the fetcher gave up; its body may be
// what failed, a message that is not a notification. With a jetstream.Msg,
// call event.DecodeFailed(msg).
func ExampleDecodeFailedData() {
	for _, m := range []*nats.Msg{
		{Subject: event.DefaultFailedPrefix + ".SENTINEL-2.S2MSI2A", Header: nats.Header{event.HeaderFetchError: {"checksum mismatch"}},
			Data: []byte(`{"SubscriptionEvent": "created", "ProductId": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"}`)},
		{Subject: event.DefaultFailedPrefix + ".UNKNOWN.UNKNOWN", Header: nats.Header{event.HeaderFetchError: {"undecodable"}},
			Data: []byte("<html>")},
	} {
		f, err := event.DecodeFailedData(m.Data, m.Header)
		if err != nil {
			panic(err)
		}
		if f.Notification == nil {
			fmt.Printf("%q given up: %s (%v)\n", f.Data, f.Reason, f.DecodeErr)
			continue
		}
		fmt.Println(f.Notification.Event, f.ProductID, "given up:", f.Reason)
	}
	// Output:
	// created 0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f given up: checksum mismatch
	// "<html>" given up: undecodable (event: not a catalogue notification)
}

// A pipeline waiting for files, over NATS: a durable consumer of the
// fetched events of its products on the fetcher's stream, acking each after
// its work. (Compiled, not run: it needs a server. docs/fetching.md shows
// its middle.)
func ExampleDecodeFetched() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Drain()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}

	subject, _ := event.Filter{Prefix: event.DefaultFetchedPrefix, Event: event.Created, Collection: "SENTINEL-2", ProductType: "S2MSI2A"}.Subject()
	cons, err := js.CreateOrUpdateConsumer(ctx, event.DefaultFetchedStream, jetstream.ConsumerConfig{
		Durable: "l2a-processor", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		log.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		f, err := event.DecodeFetched(m)
		if err != nil { // not a fetched event
			log.Print(err)
			_ = m.Term()
			return
		}
		if !f.Verified() {
			log.Printf("%s stored unverified: %s", f.ProductName, f.Unverified)
		}
		// The object is in place: s3://bucket/key or file:///dir/key.
		if err := process(ctx, f.ObjectURL, f.Size, f.Notification); err != nil {
			_ = m.Nak() // the object stays; try again later
			return
		}
		_ = m.Ack()
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Stop()
	<-ctx.Done()
}

// process stands for a pipeline's work on one stored product.
func process(ctx context.Context, objectURL string, size int64, n *event.Notification) error {
	return ctx.Err()
}

// waitComplete returns once every created product of interest published in
// [start, end] is on cdse.interest.<interest>.created.…: it reads the
// interest's complete range where it is now, then each advance.
func waitComplete(ctx context.Context, js jetstream.JetStream, interest string, start, end time.Time) error {
	cons, err := js.OrderedConsumer(ctx, event.CompleteStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{event.CompleteSubject(interest, event.Created)},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		m, err := cons.Next(jetstream.FetchMaxWait(time.Minute))
		if errors.Is(err, nats.ErrTimeout) {
			continue // no advance this minute
		}
		if err != nil {
			return err
		}
		c, err := event.DecodeComplete(m)
		if err != nil {
			return err
		}
		// Covers(start) too: a range that starts after start (a new
		// interest, a changed filter) does not guarantee it.
		if c.Covers(start) && c.Covers(end) {
			return nil
		}
	}
	return ctx.Err()
}

// A daily job runs yesterday's mosaic once its interest's created range
// passes midnight (docs/consumers.md, "Waiting for a complete day").
func ExampleDecodeComplete() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	if err := waitComplete(context.Background(), js, "l2a-alps", midnight.AddDate(0, 0, -1), midnight); err != nil {
		log.Fatal(err)
	}
	// Every L2A product of the Alps published yesterday is on
	// cdse.interest.l2a-alps.created.…: read them and run the mosaic.
}
