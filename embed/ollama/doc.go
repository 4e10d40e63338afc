// Package ollama embeds tool documents and queries through an Ollama
// server's /api/embed endpoint, with the official client
// (github.com/ollama/ollama/api): OLLAMA_HOST read exactly as Ollama reads
// it, batches, an explicit timeout, retries with backoff, and errors that
// say what to do ("ollama pull MODEL", "ollama serve"). The tests run
// against a fake server that follows /api/embed's documented wire contract.
package ollama
