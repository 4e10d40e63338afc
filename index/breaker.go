package index

import (
	"fmt"
	"sync"
	"time"
)

// breaker stops asking a failing embedder on every query: after a failure
// it is skipped for a backoff that doubles up to 30 s; a success resets it.
type breaker struct {
	mu      sync.Mutex
	until   time.Time
	backoff time.Duration
	last    error
}

func (b *breaker) open() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil || time.Now().After(b.until) {
		return ""
	}
	return fmt.Sprintf("embedder unavailable (%v); retrying in %v", b.last, time.Until(b.until).Round(100*time.Millisecond))
}

func (b *breaker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backoff = min(max(2*b.backoff, 500*time.Millisecond), 30*time.Second)
	b.until, b.last = time.Now().Add(b.backoff), err
}

func (b *breaker) ok() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backoff, b.last = 0, nil
}
