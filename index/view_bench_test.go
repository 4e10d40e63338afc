package index

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// BenchmarkUnused is what an edit of one tool's text costs to find
// whether another tool still uses its old vector (view.unused), at 100,000
// tools.
func BenchmarkUnused(b *testing.B) {
	v := &view{slots: make([]slot, 100_000)}
	for i := range v.slots {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		v.slots[i] = slot{hash: hex.EncodeToString(sum[:]), live: true}
	}
	gone := v.slots[500].hash
	v.slots[500].live = false
	b.ResetTimer()
	for range b.N {
		if got := v.unused([]string{gone}); len(got) != 1 {
			b.Fatal(got)
		}
	}
}
