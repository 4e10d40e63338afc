package main

import (
	"runtime/debug"
	"testing"
)

// TestStartupGC: start-up runs without proportional pacing under a heap
// limit, and the restore puts back exactly what was there; GOGC or
// GOMEMLIMIT in the environment leave the collector alone.
func TestStartupGC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		paused bool
	}{
		{"default", nil, true},
		{"GOGC set", map[string]string{"GOGC": "200"}, false},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "2GiB"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			percent := debug.SetGCPercent(100)
			defer debug.SetGCPercent(percent)
			limit := debug.SetMemoryLimit(-1)
			restore := startupGC(func(k string) string { return tc.env[k] })
			during := debug.SetGCPercent(-1)
			debug.SetGCPercent(during)
			duringLimit := debug.SetMemoryLimit(-1)
			if tc.paused {
				if want := startupHeapLimit(); during != -1 || duringLimit != want || want <= 0 || want > startupHeap {
					t.Errorf("during start-up: GOGC %d, limit %d; want -1 and %d (at most %d)", during, duringLimit, want, startupHeap)
				}
			} else if during != 100 || duringLimit != limit {
				t.Errorf("with %v the collector was changed: GOGC %d, limit %d", tc.env, during, duringLimit)
			}
			restore()
			restore() // a second call changes nothing
			if got := debug.SetGCPercent(percent); got != 100 {
				t.Errorf("after restore GOGC is %d, want 100", got)
			}
			if got := debug.SetMemoryLimit(limit); got != limit {
				t.Errorf("after restore the limit is %d, want %d", got, limit)
			}
		})
	}
}
