package ollama

import "github.com/toolsrv/toolsrv/embed"

// Name is the name the Ollama embedder is registered under.
const Name = "ollama"

func init() { embed.Register(Name, driver{}) }

// driver opens Ollama embedders for embed.Open.
type driver struct{}

// Open implements embed.Driver with Options' defaults for what embed.Options
// does not say.
func (driver) Open(o embed.Options) (embed.Embedder, error) {
	e, err := New(Options{Getenv: o.Getenv, Model: o.Model, Timeout: o.Timeout, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Needs implements embed.Driver.
func (driver) Needs() embed.Needs {
	return embed.Needs{Server: "an Ollama server at $OLLAMA_HOST", Model: DefaultModel}
}
