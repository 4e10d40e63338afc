package main

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/term"
)

// Text toolsrv prints may come from others: an MCP server's or a remote
// toolsrv's tool descriptions, an MCP server's standard error in a
// problem, an agent's requests in the usage history. Written as it is to
// a terminal, an escape sequence in it could retitle the window, set the
// clipboard (OSC 52), or move the cursor and overwrite what was printed
// (a dangerous tool listed as a harmless one), and a bidirectional
// control could reorder what is shown. The commands that print for
// people write through termSafe, which shows every such character as
// \uXXXX: a control character (C0 but newline and tab, DEL, C1), a
// bidirectional control, and a byte that is not UTF-8 (\ufffd). In JSON
// output that is the same character's escape, so JSON stays valid and
// means the same.

// termSafe writes to w with the characters above escaped.
type termSafe struct{ w io.Writer }

func (t termSafe) Write(p []byte) (int, error) {
	if plainASCII(p) {
		return t.w.Write(p)
	}
	if _, err := t.w.Write(appendTermSafe(make([]byte, 0, len(p)+32), p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plainASCII says whether p is printable ASCII, newlines and tabs: what
// termSafe writes as it is without decoding it.
func plainASCII(p []byte) bool {
	for _, b := range p {
		if b >= 0x7f || b < 0x20 && b != '\n' && b != '\t' {
			return false
		}
	}
	return true
}

// unsafeRune says whether termSafe shows r escaped.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls
	}
	return false
}

// appendTermSafe appends p to dst with the characters termSafe escapes
// as \uXXXX.
func appendTermSafe(dst, p []byte) []byte {
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, `\ufffd`...)
		case unsafeRune(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, p[:n]...)
		}
		p = p[n:]
	}
	return dst
}

// stderrTerminal is standard error when it is a terminal (nil otherwise),
// unwrapped: what progress bars draw on with escape sequences of their
// own.
func (env *cliEnv) stderrTerminal() *os.File {
	w := env.stderr
	if t, ok := w.(termSafe); ok {
		w = t.w
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}
