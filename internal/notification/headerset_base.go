//go:build benchbaseheaders

package notification

// ConsumerHeaders is false in this build: messages carry only the routing
// headers they had before the consumer headers were added (Nats-Msg-Id,
// Cdse-Event, -Product-Id, -Collection, -Product-Name, -Subscription-Id,
// -Source). Only `make bench-headers` builds it, as the baseline it
// compares the real receiver with; it is never released.
const ConsumerHeaders = false
