package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls f(0) … f(n-1) on up to GOMAXPROCS goroutines and returns when
// every call has returned. The calls must be independent.
func Each(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}
