// Package docs checks that what the README tells users to type works: its
// test runs the README's nats CLI lines against a real receiver.
package docs
