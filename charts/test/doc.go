// Package charttest renders and lints the Helm chart in ../receiver with the
// Helm Go module, and checks the manifests as Kubernetes objects. It is a
// module of its own so that the receiver's module does not depend on Helm
// and Kubernetes; `make test` runs it after the receiver's tests.
package charttest
