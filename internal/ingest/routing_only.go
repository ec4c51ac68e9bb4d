//go:build benchbaseheaders

package ingest

// The baseline of `make bench-headers`: messages carry only the routing
// headers they had before the consumer headers were added (Nats-Msg-Id,
// Cdse-Event, -Product-Id, -Collection, -Product-Name, -Subscription-Id,
// -Source; a copy adds its own). Never released; see consumerHeaders.
func init() { consumerHeaders = false }
