package embed

import (
	"slices"
	"strings"
	"testing"
)

type nopDriver struct{}

func (nopDriver) Open(Options) (Embedder, error) { return nil, nil }
func (nopDriver) Needs() Needs                   { return Needs{} }

func TestRegister(t *testing.T) {
	Register("test-a", nopDriver{})
	Register("test-0", nopDriver{})
	names := Drivers()
	if !slices.IsSorted(names) || !slices.Contains(names, "test-a") || !slices.Contains(names, "test-0") {
		t.Errorf("Drivers() = %v, want sorted, with test-a and test-0", names)
	}
	if d, err := Lookup("test-a"); err != nil || d != (nopDriver{}) {
		t.Errorf("Lookup(test-a) = %v, %v", d, err)
	}
	_, err := Open("nope", Options{})
	if want := `unknown embedder "nope": toolsrv has ` + strings.Join(names, ", "); err == nil || err.Error() != want {
		t.Errorf("Open(nope): %v, want %s", err, want)
	}
	for _, tc := range []struct {
		name string
		d    Driver
	}{{"", nopDriver{}}, {"test-b", nil}, {"test-a", nopDriver{}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %v) did not panic", tc.name, tc.d)
				}
			}()
			Register(tc.name, tc.d)
		}()
	}
}

func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		n    Needs
		want string
	}{
		{Needs{}, "no network"},
		{Needs{Model: "m"}, "no network"},
		{Needs{Server: "an Ollama server at $OLLAMA_HOST", Model: "m"}, "an Ollama server at $OLLAMA_HOST"},
	} {
		if got := tc.n.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.n, got, tc.want)
		}
	}
}
