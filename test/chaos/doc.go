// Package chaos runs the receiver as production runs it, as separate
// processes — a 3-node nats-server cluster with the stream on three
// replicas, two receiver replicas behind a load balancer, the catalogue
// simulator pushing (three retries, then dropped; every notification sent
// twice), PULL and the reconciler on one replica — injects faults drawn
// from a seed, and then checks the promise: every product event the
// simulator announced is on the stream exactly once, whichever way it
// came, and none that a replica acknowledged is missing. Two fetcher
// replicas store the SENTINEL-2 products into a versitygw process (a
// directory every third seed) under the download service's faults and
// their own (kill -9 of a replica and of the S3 server, a cut NATS
// connection, SIGSTOP past the ack wait): each product once, verified,
// nothing partial left once swept, the download cap kept
// (docs/RELIABILITY.md, The fetcher under chaos).
//
// The short run is part of make test; make chaos runs long ones.
package chaos
