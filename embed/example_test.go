package embed_test

import (
	"context"
	"fmt"

	"github.com/toolsrv/toolsrv/embed"
	_ "github.com/toolsrv/toolsrv/embed/builtin" // registers "builtin"
)

func ExampleOpen() {
	e, err := embed.Open(embed.Default, embed.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := e.EmbedQuery(context.Background(), "find every TODO in the go files")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Dim() == len(v), e.Dim() > 0)
	// Output: true true
}
