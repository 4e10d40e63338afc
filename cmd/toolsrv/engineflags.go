package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
)

// engineFlags are the flags that configure the engine's embedder and index
// (shared by serve, rank, eval, tune and bench).
type engineFlags struct {
	name, model string
	timeout     time.Duration
	cacheDir    string
	noCache     bool
	alpha       float64
}

func addEngineFlags(fs *flag.FlagSet) *engineFlags {
	f := &engineFlags{}
	fs.StringVar(&f.name, "embedder", embed.Default, "embedder: "+embedderHelp())
	fs.StringVar(&f.model, "model", "", "embedding model, for embedders that have several (default "+modelHelp()+")")
	fs.DurationVar(&f.timeout, "embed-timeout", 60*time.Second, "timeout of each request to an embedding server")
	fs.StringVar(&f.cacheDir, "cache", "", "index cache directory (default: the user cache dir, toolsrv/<embedder>)")
	fs.BoolVar(&f.noCache, "no-cache", false, "keep the index in memory only")
	fs.Float64Var(&f.alpha, "lexical-weight", 0.5, "hybrid score = w·lexical + (1−w)·dense, 0 < w ≤ 1")
	return f
}

// check reports a bad flag (a usage error) before any work.
func (f *engineFlags) check() error {
	if f.name != "" {
		if _, err := embed.Lookup(f.name); err != nil {
			return err
		}
	}
	if f.alpha <= 0 || f.alpha > 1 {
		return fmt.Errorf("--lexical-weight %v: want 0 < w ≤ 1 (use --mode dense for vectors only)", f.alpha)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--embed-timeout %v: want a positive duration such as 60s", f.timeout)
	}
	return nil
}

// embedderChoice is the embedders' names for usage lines: "builtin|ollama".
func embedderChoice() string { return strings.Join(embed.Drivers(), "|") }

// embedderHelp lists the embedders and what each needs, from the registry:
// "builtin (no network) or ollama (an Ollama server at $OLLAMA_HOST)".
func embedderHelp() string {
	var list []string
	for _, name := range embed.Drivers() {
		if d, err := embed.Lookup(name); err == nil {
			list = append(list, fmt.Sprintf("%s (%s)", name, d.Needs()))
		}
	}
	if len(list) > 1 {
		return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
	}
	return strings.Join(list, "")
}

// modelHelp names each embedder's default model: "ollama: nomic-embed-text".
func modelHelp() string {
	var list []string
	for _, name := range embed.Drivers() {
		if d, err := embed.Lookup(name); err == nil && d.Needs().Model != "" {
			list = append(list, name+": "+d.Needs().Model)
		}
	}
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, "; ")
}

// embedOptions are the options embed.Open gets.
func (f *engineFlags) embedOptions(env *cliEnv) embed.Options {
	return embed.Options{Model: f.model, Timeout: f.timeout, Getenv: env.getenv, Logger: logger(env)}
}

// open makes the chosen embedder (for front ends that share one between
// several engines).
func (f *engineFlags) open(env *cliEnv) (embed.Embedder, error) {
	return embed.Open(f.name, f.embedOptions(env))
}

// options are the engine options the flags stand for, over dirs, with a
// progress bar on stderr while tools are embedded (on a terminal).
func (f *engineFlags) options(env *cliEnv, dirs []string, p *indexProgress) engine.Options {
	o := engine.Options{Dirs: dirs, EmbedderName: f.name, Embed: f.embedOptions(env), CacheDir: f.cacheDir,
		NoCache: f.noCache, LexicalWeight: f.alpha, Getenv: env.getenv, Logger: logger(env)}
	if p != nil {
		o.Progress = p.update
	}
	return o
}

// warn prints the engine's warnings.
func warn(env *cliEnv, cmd string, eng *engine.Engine) {
	for _, w := range eng.Warnings() {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: %s\n", cmd, w)
	}
}

// indexProgress draws a progress bar while tools are embedded, only on a
// terminal.
type indexProgress struct {
	out *os.File
	pb  *progressbar.ProgressBar
}

func newIndexProgress(env *cliEnv) *indexProgress {
	return &indexProgress{out: env.stderrTerminal()}
}

func (p *indexProgress) update(done, total int) {
	if p.out == nil || total < 2 {
		return
	}
	if p.pb == nil || done == 0 {
		p.finish()
		p.pb = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.out),
			progressbar.OptionSetDescription("embedding tools"), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	p.pb.Set(done)
}

func (p *indexProgress) finish() {
	if p.pb != nil {
		p.pb.Finish()
		p.pb = nil
	}
}
