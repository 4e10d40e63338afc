package embed_test

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/toolsrv/toolsrv/embed"
)

// In the embedder's package (here a toy one, "letters"): register the
// driver when the package is initialised. A program that imports the
// package can then open the embedder by name.
func init() { embed.Register("letters", lettersDriver{}) }

// letters is a toy embedder: a text's vector counts its letters a…z.
type letters struct{}

func (letters) ID() string { return "letters/v1" }
func (letters) Dim() int   { return 26 }

func (l letters) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	v := make([]float32, 26)
	var n float64
	for _, r := range strings.ToLower(text) {
		if r >= 'a' && r <= 'z' {
			v[r-'a']++
		}
	}
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		return nil, fmt.Errorf("letters: no letter in %q", text)
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v, nil
}

func (l letters) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, err := l.EmbedQuery(ctx, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// lettersDriver opens letters; it needs nothing.
type lettersDriver struct{}

func (lettersDriver) Open(embed.Options) (embed.Embedder, error) { return letters{}, nil }
func (lettersDriver) Needs() embed.Needs                         { return embed.Needs{} }

func ExampleRegister() {
	e, err := embed.Open("letters", embed.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := e.EmbedQuery(context.Background(), "aab")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: dim %d, a %.3f, b %.3f\n", e.ID(), e.Dim(), v[0], v[1])
	// Output:
	// letters/v1: dim 26, a 0.894, b 0.447
}
