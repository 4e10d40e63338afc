//go:build cgo

package sandbox

// cgoEnabled: the binary has cgo, and the Go runtime cannot make a system
// call on every thread (see allThreads).
const cgoEnabled = true
