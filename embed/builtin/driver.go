package builtin

import "github.com/toolsrv/toolsrv/embed"

// Name is the name the built-in embedder is registered under (embed.Default).
const Name = "builtin"

func init() { embed.Register(Name, driver{}) }

// driver opens the built-in embedder for embed.Open.
type driver struct{}

// Open implements embed.Driver: the shipped table; it has no options.
func (driver) Open(embed.Options) (embed.Embedder, error) {
	e, err := New()
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Needs implements embed.Driver: nothing, one model, no network.
func (driver) Needs() embed.Needs { return embed.Needs{} }
