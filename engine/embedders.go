package engine

// The embedders an engine opens by name (Options.EmbedderName): importing
// an embedder's package registers it with package embed. A new embedder is
// a package whose init calls embed.Register, and its line here.
import (
	_ "github.com/toolsrv/toolsrv/embed/builtin"
	_ "github.com/toolsrv/toolsrv/embed/ollama"
)
