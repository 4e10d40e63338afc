package embed

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// drivers is the registry: the one piece of package-level state in
// package embed, written by Register (in init functions) and read by Open.
var (
	driversMu sync.RWMutex
	drivers   = make(map[string]Driver)
)

// Register makes the embedder d opens known to Open as name. It is called
// from the init function of the embedder's package; it panics if name is
// empty, d is nil or name is taken, which are programming errors.
func Register(name string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if name == "" {
		panic("embed: Register with an empty name")
	}
	if d == nil {
		panic("embed: Register driver is nil")
	}
	if _, dup := drivers[name]; dup {
		panic("embed: Register called twice for embedder " + name)
	}
	drivers[name] = d
}

// Drivers returns the names of the registered embedders, sorted: what
// --embedder accepts.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for name := range drivers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the driver registered as name, or an error that lists
// the registered ones.
func Lookup(name string) (Driver, error) {
	driversMu.RLock()
	d, ok := drivers[name]
	driversMu.RUnlock()
	if ok {
		return d, nil
	}
	names := Drivers()
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown embedder %q: none is registered (import one, such as github.com/toolsrv/toolsrv/embed/builtin)", name)
	}
	return nil, fmt.Errorf("unknown embedder %q: toolsrv has %s", name, strings.Join(names, ", "))
}
