//go:build !cgo

package sandbox

// cgoEnabled: the binary has cgo (see allThreads).
const cgoEnabled = false
