// Package e2e holds the end-to-end tests: the catalogue simulator, the real
// receiver (embedded NATS) and the register command together, as an
// operator would run them. It has no code of its own.
package e2e
