package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// TestToolHashIsStable: a tool's Hash is what it was when it was written
// with fmt (index caches and remotes key on it).
func TestToolHashIsStable(t *testing.T) {
	old := func(digest [32]byte, idx int, cmd Command) string {
		sum := sha256.New()
		sum.Write(digest[:])
		fmt.Fprintf(sum, "\x00%d\x00%s\x00%s", idx, cmd.Kind, strings.Join(cmd.Argv, "\x00"))
		return hex.EncodeToString(sum.Sum(nil))[:16]
	}
	cases := []struct {
		idx int
		cmd Command
	}{
		{-1, Command{Kind: CoLocated, Argv: []string{"/tools/greet"}}},
		{0, Command{Kind: Direct, Argv: []string{"/usr/bin/cat"}}},
		{12, Command{Kind: Shell, Argv: []string{"/bin/sh", "-c", "grep -r \"$1\" .", "sh"}}},
		{3, Command{Kind: Direct}},
		{-1, Command{Kind: Shell, Argv: []string{"", "a\x00b"}}},
	}
	for i, c := range cases {
		digest := sha256.Sum256([]byte(fmt.Sprint("file ", i)))
		if got, want := toolHash(digest, c.idx, c.cmd), old(digest, c.idx, c.cmd); got != want {
			t.Errorf("case %d: toolHash = %s, want %s", i, got, want)
		}
	}
}
