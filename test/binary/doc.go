// Package binary holds the whole-binary tests: they build the real
// receiver (and register, cdse-sim) and run them as processes, as a user
// would, with the environment and flags the README shows. Only _test files
// live here; nothing imports this package.
package binary
