//go:build !amd64 && !arm64

package sandbox

// nativeSyscalls is empty: the filter's numbers are tested on amd64 and
// arm64 only, and the helper refuses to run confined tools elsewhere.
var nativeSyscalls syscalls
