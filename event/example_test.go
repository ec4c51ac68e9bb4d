package event_test

import (
	"fmt"

	"github.com/nats-io/nats.go"

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
