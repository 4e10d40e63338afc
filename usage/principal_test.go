package usage

import "testing"

// A unit is what belief is earned by: the names a recorder can make up
// count as one (another instance's principals, a remote host's agents,
// every legacy name), the others each as their own.
func TestUnit(t *testing.T) {
	for _, c := range []struct{ p, unit string }{
		{Owner, Owner},
		{"mcp:claude", "mcp:claude"},
		{"9p:a7", "9p:a7"},
		{"9p:a7@tcp:build1", "tcp:build1"},
		{"instance:0123456789abcdef/owner", "instance:0123456789abcdef"},
		{"instance:0123456789abcdef/9p:a7", "instance:0123456789abcdef"},
		{Legacy("claude"), LegacyUnit},
		{Legacy("forged-name-17"), LegacyUnit},
		{Legacy(""), LegacyUnit},
	} {
		if got := Unit(c.p); got != c.unit {
			t.Errorf("Unit(%q) = %q, want %q", c.p, got, c.unit)
		}
	}
}
