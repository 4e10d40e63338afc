package parallel

import (
	"sync/atomic"
	"testing"
)

func TestEachCallsEveryItemOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		counts := make([]atomic.Int32, n)
		Each(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: item %d called %d times", n, i, c)
			}
		}
	}
}
