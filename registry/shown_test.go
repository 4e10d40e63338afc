package registry

import "testing"

func TestQuoteArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/sh", "-c", "echo hi; rm -rf ~"}, `/bin/sh -c 'echo hi; rm -rf ~'`},
		{[]string{"git", "commit", "-m", "it's done"}, `git commit -m 'it'\''s done'`},
		{[]string{"x", "", "a=b,c"}, `x '' a=b,c`},
		{[]string{"ls", "*.go", "a>b"}, `ls '*.go' 'a>b'`},
	} {
		if got := QuoteArgv(c.argv); got != c.want {
			t.Errorf("%q: %s, want %s", c.argv, got, c.want)
		}
	}
}
