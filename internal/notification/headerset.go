//go:build !benchbaseheaders

package notification

// ConsumerHeaders says whether messages carry the headers added for
// consumers (product type, dates, size, S3 path, download and STAC URLs,
// CloudEvents) on top of the routing ones. Always true in a real build; the
// benchbaseheaders build tag (headerset_base.go) turns it off so that
// `make bench-headers` can measure what those headers cost.
const ConsumerHeaders = true
