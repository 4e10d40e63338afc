package registry

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds on an argument schema ("args"), checked before it is compiled. The
// JSON Schema library's compile time grows much faster than linearly with
// nesting (5,000 nested "not" took 85 s), so a schema beyond them is refused
// at once. Real tool schemas are a few KB and a few levels deep.
const (
	// MaxSchemaSize is the largest schema, in bytes as written.
	MaxSchemaSize = 256 << 10
	// MaxSchemaDepth is the deepest nesting of JSON objects and arrays in a
	// schema ({"type":"object"} is 1 deep).
	MaxSchemaDepth = 64
	// DefaultCompileTimeout is Options.CompileTimeout's default.
	DefaultCompileTimeout = 10 * time.Second
)

// defaultArgs is the schema of a tool that declares none.
var defaultArgs = json.RawMessage(`{"type":"object"}`)

// schemaBounds says why raw is too big or too deep to compile, or "".
func schemaBounds(raw []byte) string {
	if len(raw) > MaxSchemaSize {
		return fmt.Sprintf("is %d bytes; the limit for a schema is %d (%d KiB): shorten it, or share repeated parts under \"$defs\"",
			len(raw), MaxSchemaSize, MaxSchemaSize>>10)
	}
	if d := jsonDepth(raw); d > MaxSchemaDepth {
		return fmt.Sprintf("nests %d levels deep; the limit for a schema is %d: flatten it (define the parts under \"$defs\" and use \"$ref\")",
			d, MaxSchemaDepth)
	}
	return ""
}

// jsonDepth is the deepest nesting of objects and arrays in a valid JSON
// document, found without decoding it.
func jsonDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// compileJob is the compilation of one schema, shared by every tool whose
// schema has the same bytes. It runs on its own goroutine, never under the
// registry's lock, and is settled (done closed) when the compile ends or its
// deadline passes, whichever comes first: a late compile is abandoned and
// its result ignored, so the outcome never changes once settled.
type compileJob struct {
	raw  json.RawMessage
	done chan struct{}
	once sync.Once
	// Set before done is closed.
	schema *jsonschema.Schema
	errMsg string // why the schema is unusable, when schema is nil
	// known: the schema compiled before (the known-schemas cache says so)
	// and is compiled again only when a call needs it (see compiled).
	known      bool
	lazy       sync.Once
	lazySchema *jsonschema.Schema
	lazyErr    string
	lazyFn     func([]byte) (*jsonschema.Schema, error)
	lazyLimit  time.Duration

	// waiters are tools (guarded by Registry.mu) that another update found
	// waiting for this job; the job's owner re-resolves them.
	waiters map[string]bool
}

func newCompileJob(raw json.RawMessage) *compileJob {
	return &compileJob{raw: raw, done: make(chan struct{}), waiters: map[string]bool{}}
}

// settleKnown settles j as valid without compiling it: compiled does that
// on first use, with compile and within timeout.
func (j *compileJob) settleKnown(compile func([]byte) (*jsonschema.Schema, error), timeout time.Duration) {
	j.known, j.lazyFn, j.lazyLimit = true, compile, timeout
	j.settle(nil, "")
}

// usable reports whether the settled job's schema compiled (or is known
// to).
func (j *compileJob) usable() bool { return j.schema != nil || j.known }

// compiled returns the settled job's schema, compiling a known one on the
// first call. A known schema that no longer compiles (the cache was
// wrong) is an error, never a schema that lets everything through.
func (j *compileJob) compiled() (*jsonschema.Schema, error) {
	if !j.known {
		if j.schema == nil {
			return nil, fmt.Errorf("the argument schema %s", j.errMsg)
		}
		return j.schema, nil
	}
	// Separate fields: j.schema is read under the registry's lock, and
	// a call compiles without it.
	j.lazy.Do(func() {
		lj := newCompileJob(j.raw)
		lj.start(j.lazyFn, j.lazyLimit)
		<-lj.done
		j.lazySchema, j.lazyErr = lj.schema, lj.errMsg
	})
	if j.lazySchema == nil {
		return nil, fmt.Errorf("the argument schema, taken as valid from the known-schemas cache, %s: run toolsrv validate", j.lazyErr)
	}
	return j.lazySchema, nil
}

func (j *compileJob) settled() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

func (j *compileJob) settle(s *jsonschema.Schema, errMsg string) {
	j.once.Do(func() {
		j.schema, j.errMsg = s, errMsg
		close(j.done)
	})
}

// start compiles on a new goroutine and settles the job with the result, or
// with a timeout error after timeout.
func (j *compileJob) start(compile func([]byte) (*jsonschema.Schema, error), timeout time.Duration) {
	t := time.AfterFunc(timeout, func() {
		j.settle(nil, fmt.Sprintf("took longer than %s to compile and was abandoned: simplify the schema", timeout))
	})
	go func() {
		defer func() {
			if p := recover(); p != nil {
				t.Stop()
				j.settle(nil, fmt.Sprintf("could not be compiled (the JSON Schema library failed: %v): simplify the schema", p))
			}
		}()
		s, err := compile(j.raw)
		t.Stop()
		if err != nil {
			j.settle(nil, err.Error())
			return
		}
		j.settle(s, "")
	}()
}

// runJobs starts jobs, at most GOMAXPROCS at a time (a job counts until it
// is settled, so an abandoned compile frees its slot), and returns when all
// are settled.
func runJobs(jobs []*compileJob, compile func([]byte) (*jsonschema.Schema, error), timeout time.Duration) {
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		slots <- struct{}{}
		j.start(compile, timeout)
		go func() {
			<-j.done
			<-slots
		}()
	}
	for _, j := range jobs {
		<-j.done
	}
}

// schemaCache holds the compile job of every schema by content (catalogs
// repeat a few shapes many times). Guarded by Registry.mu.
type schemaCache map[[32]byte]*compileJob

// job returns the job for raw (whose SHA-256 is key), creating it (not
// started) when there is none; created reports that.
func (c schemaCache) job(key [32]byte, raw json.RawMessage) (j *compileJob, created bool) {
	if j, ok := c[key]; ok {
		return j, false
	}
	j = newCompileJob(raw)
	c[key] = j
	return j, true
}

// compileSchema compiles one argument schema with external references
// refused. The error is a message for the "args" field.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(noExternalRefs{})
	// The URL names no tool: compiled schemas are shared between tools.
	const url = "tool:///args.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("is not a usable JSON Schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("does not compile as a JSON Schema: %s; fix it so it validates against the JSON Schema metaschema", oneLine(err.Error()))
	}
	if cost := schemaCost(s); cost > MaxSchemaCost {
		return nil, fmt.Errorf("is too costly to validate: one value may be checked against %.3g subschemas (the limit is %d; shared $refs under anyOf/oneOf/allOf multiply); simplify it", cost, MaxSchemaCost)
	}
	return s, nil
}

// noExternalRefs refuses every $ref outside the schema itself: a .meta must
// not make the server read local files or fetch URLs.
type noExternalRefs struct{}

func (noExternalRefs) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed; inline the definition under \"$defs\"", url)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.Join(strings.Fields(s), " ")
}

// jobLocked returns the compile job for raw (its SHA-256 is key) and
// whether it is new and must be run. A schema the known-schemas cache vouches for is settled at once,
// to be compiled on first use.
func (r *Registry) jobLocked(key [32]byte, raw json.RawMessage) (j *compileJob, fresh bool) {
	j, created := r.schemas.job(key, raw)
	if !created {
		return j, false
	}
	if r.known.has(raw) {
		j.settleKnown(r.compile, r.opts.CompileTimeout)
		return j, false
	}
	return j, true
}
