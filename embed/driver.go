package embed

// A Driver makes one kind of embedder. An embedder's package registers its
// driver with Register in an init function, as database/sql drivers do, so
// that importing the package is what makes the name known to Open.
type Driver interface {
	// Open makes an embedder from o. It must not contact a server: the
	// index decides when to embed, and a server that is down makes the
	// ranking degraded rather than the start fail.
	Open(o Options) (Embedder, error)
	// Needs says what the embedder needs to run, for help texts.
	Needs() Needs
}

// Needs is what an embedder needs to run, as its driver says.
type Needs struct {
	// Server is the server it embeds through and where its address comes
	// from ("an Ollama server at $OLLAMA_HOST"); "" when it runs in
	// process, with no network.
	Server string
	// Model is the model it uses when Options.Model is empty; "" when it
	// has one model only and ignores Options.Model.
	Model string
}

// String says it in a few words, for flag help: "no network", "an Ollama
// server at $OLLAMA_HOST".
func (n Needs) String() string {
	if n.Server == "" {
		return "no network"
	}
	return n.Server
}
