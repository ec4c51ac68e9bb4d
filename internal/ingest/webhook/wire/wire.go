// Package wire is the preflight protocol between the receiver, which
// answers it (internal/ingest/webhook), and the check that asks it
// (internal/register/preflight): both import these, so the two cannot disagree, and
// the receiver does not depend on the checker.
//
// A preflight request is a POST with Header: 1 and no body. Without
// credentials the receiver answers 401 with a Basic challenge of Realm
// (the one place the realm is written); with them, 200 with an Answer whose
// Service is Service.
package wire

// The protocol's constants.
const (
	Header  = "Cdse-Preflight"
	Realm   = "cdse-receiver"
	Service = "cdse-jetstream-receiver"
)

// Answer is the receiver's answer to a preflight request.
type Answer struct {
	Preflight string `json:"preflight"`
	Service   string `json:"service"`
	Version   string `json:"version"`
}
