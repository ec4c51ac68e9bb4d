// Package node holds the test of the Node.js consumer in this directory
// (consumer.mjs): it installs the consumer with npm ci from its lockfile
// and runs it against a real receiver.
package node
