package thresholds

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/embed/embedder"
	"github.com/toolsrv/toolsrv/internal/fileio"
)

// Format and Version identify a thresholds file. A file with a higher
// version was written by a newer toolsrv and is refused, not guessed at.
const (
	Format  = "toolsrv-thresholds"
	Version = 2
)

// EnvPath is the environment variable naming a thresholds file to use
// instead of the per-embedder one.
const EnvPath = "TOOLSRV_THRESHOLDS"

// File is the on-disk form of a Policy for one embedder and model.
type File struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Embedder string `json:"embedder"` // embed.Embedder.ID() of the unfitted embedder
	Policy   Policy `json:"policy"`
	// Scores (version 2) is the learned last step the levels were tuned on
	// (learn.Model.ID, "learn/v1-…"); empty: the fixed fusion's scores.
	// Version 1 files have neither scores nor MinAnswerable/Mass.
	Scores string `json:"scores,omitempty"`
	// Tuning records how the thresholds were chosen (absent when hand-written).
	Tuning *Tuning `json:"tuning,omitempty"`

	// Source, Path and Warning are what `toolsrv tune --show --json` adds
	// to the thresholds in effect: where they were found (the file read,
	// if any) and why they may not fit. Its output saved as it is is a
	// thresholds file: reading one ignores these three, and writing one
	// leaves them out.
	Source  SourceKind `json:"source,omitempty"`
	Path    string     `json:"path,omitempty"`
	Warning string     `json:"warning,omitempty"`
}

// Tuning is the provenance of tuned thresholds.
type Tuning struct {
	Date      time.Time `json:"date"`
	Command   string    `json:"command,omitempty"`
	Objective string    `json:"objective"`
	Corpora   []string  `json:"corpora"`
	// LexicalWeight is the hybrid weight the rankings were made with:
	// thresholds hold for that weight only.
	LexicalWeight float64 `json:"lexicalWeight,omitempty"`
	// HeldOut holds the figures measured on queries left out of the sweep.
	HeldOut map[string]Figures `json:"heldOut,omitempty"`
}

// Figures are the quality of a policy on a set of labelled queries.
type Figures struct {
	Queries int `json:"queries"` // answerable queries (relevant tools present)
	Abstain int `json:"abstain"` // queries whose relevant tools were removed
	// Recall is the mean share of a query's relevant tools that were offered.
	Recall float64 `json:"recall"`
	// Precision is the mean share of offered tools that are relevant, over
	// answerable queries that were offered something.
	Precision float64 `json:"precision"`
	// Offered is the mean number of tools offered per answerable query.
	Offered float64 `json:"offered"`
	// AbstainRecall is the share of abstain queries answered "no tool fits".
	AbstainRecall float64 `json:"abstainRecall"`
	// AbstainPrecision is the share of "no tool fits" answers that were
	// right (given on an abstain query); 1 when never said.
	AbstainPrecision float64 `json:"abstainPrecision"`
	// Hit (version 2) is the share of answerable queries whose offered set
	// holds a relevant tool; Accuracy the share of all queries decided
	// right (a hit, or "no tool fits" on an abstain query).
	Hit      float64 `json:"hit,omitempty"`
	Accuracy float64 `json:"accuracy,omitempty"`
}

// Check says what is wrong with f, if anything.
func (f *File) Check() error {
	if f.Format != Format {
		return fmt.Errorf("format %q is not %q: not a toolsrv thresholds file", f.Format, Format)
	}
	if f.Version < 1 {
		return fmt.Errorf("version %d: must be at least 1", f.Version)
	}
	if f.Version > Version {
		return fmt.Errorf("version %d is newer than this toolsrv understands (%d): upgrade toolsrv or run `toolsrv tune` again", f.Version, Version)
	}
	if f.Embedder == "" {
		return errors.New("embedder is empty: say which embedder these thresholds were tuned for")
	}
	if err := f.Policy.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// Parse decodes and checks a thresholds file. Unknown fields are refused so
// a typo in a hand-edited file is not silently ignored.
func Parse(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decoding thresholds: %w", err)
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	f.Source, f.Path, f.Warning = "", "", ""
	return &f, nil
}

// MaxFileSize is the largest thresholds file read (a real one is a few KB).
const MaxFileSize = 1 << 20

// ReadFile reads and checks the thresholds file at path. It must be a
// regular file of at most MaxFileSize bytes: a named pipe or a device is
// refused at once instead of blocking or reading forever.
func ReadFile(path string) (*File, error) {
	data, err := fileio.ReadRegular(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// WriteFile checks f and writes it to path atomically (fileio.WriteAtomic:
// temp file, fsync, rename, fsync of the directory), creating the
// directory (0700). The file is 0600: it says what was tuned, on which
// corpora.
func WriteFile(path string, f *File) error {
	if f.Format == "" {
		f.Format = Format
	}
	if f.Version == 0 {
		f.Version = Version
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("refusing to write thresholds: %w", err)
	}
	g := *f
	g.Source, g.Path, g.Warning = "", "", ""
	data, err := json.MarshalIndent(&g, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return fileio.WriteAtomic(path, 0o600, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Key turns an embedder ID into a file name stem: characters outside
// [A-Za-z0-9._-] become '_' ("builtin/v1" → "builtin_v1").
func Key(embedderID string) string {
	var b strings.Builder
	for _, r := range embedderID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// DefaultPath is where the thresholds for embedderID live:
// os.UserConfigDir()/toolsrv/thresholds/<Key(id)>.json.
func DefaultPath(embedderID string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the user config directory: %w (set $XDG_CONFIG_HOME or pass --thresholds FILE)", err)
	}
	return filepath.Join(dir, "toolsrv", "thresholds", Key(embedderID)+".json"), nil
}

//go:embed defaults/*.json
var shipped embed.FS

// Shipped returns the thresholds shipped in the binary for embedderID, if
// any (the built-in embedder's defaults). exact is false when they were
// tuned for another member of the embedder's family (embedder.Family): IDs
// that differ only in a trailing model digest ("builtin/v1-2eae4a02" and
// "builtin/v1-0c1d…") or a fit suffix.
// That happens when the model changed after the defaults were tuned; the
// caller should warn and suggest `toolsrv tune`.
func Shipped(embedderID string) (f *File, exact bool, ok bool) {
	ents, err := fs.ReadDir(shipped, "defaults")
	if err != nil {
		return nil, false, false
	}
	var family *File
	for _, e := range ents {
		data, err := fs.ReadFile(shipped, "defaults/"+e.Name())
		if err != nil {
			continue
		}
		g, err := Parse(data)
		if err != nil {
			continue // a broken shipped file is a build bug; the package test catches it
		}
		if g.Embedder == embedderID {
			return g, true, true
		}
		if embedder.Family(g.Embedder) == embedder.Family(embedderID) && (family == nil || g.Embedder > family.Embedder) {
			family = g
		}
	}
	if family != nil {
		return family, false, true
	}
	return nil, false, false
}

// Fallback is the policy used when no thresholds exist for an embedder:
// conservative, so an untuned embedder offers few tools rather than many.
func Fallback() Policy {
	return Policy{Levels: Levels{Min: 0.5, ColdMin: 0.6, Relative: 0.8, MaxTools: 5}}
}

// SourceKind says where a loaded policy came from.
type SourceKind string

const (
	FromFlag     SourceKind = "flag"     // LoadOptions.Path
	FromEnv      SourceKind = "env"      // $TOOLSRV_THRESHOLDS
	FromUser     SourceKind = "user"     // the per-embedder file in the user config dir
	FromShipped  SourceKind = "shipped"  // defaults built into the binary
	FromFallback SourceKind = "fallback" // nothing found: Fallback()
)

// Source describes where a policy came from.
type Source struct {
	Kind SourceKind
	Path string // the file read, if any
	File *File
	// Warning is set when the policy is usable but not right for this
	// embedder: the fallback, or shipped defaults tuned for another model.
	Warning string
}

func (s Source) String() string {
	if s.Path != "" {
		return fmt.Sprintf("%s (%s)", s.Path, s.Kind)
	}
	return string(s.Kind)
}

// LoadOptions override where Load looks.
type LoadOptions struct {
	// Path is an explicit thresholds file (the --thresholds flag); it must exist.
	Path string
	// Getenv reads $TOOLSRV_THRESHOLDS (nil: os.Getenv).
	Getenv func(string) string
	// Dir replaces os.UserConfigDir()/toolsrv/thresholds (tests).
	Dir string
	// AnyEmbedder accepts a file tuned for another embedder (otherwise an
	// error: thresholds do not transfer between embedders).
	AnyEmbedder bool
}

// Load finds the policy for embedderID: an explicit path, then
// $TOOLSRV_THRESHOLDS, then the user's per-embedder file, then the shipped
// defaults, then Fallback(). A file that exists but is unreadable, invalid,
// newer than this toolsrv or tuned for another embedder is an error, never
// silently skipped.
func Load(embedderID string, o LoadOptions) (Policy, Source, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	explicit := []struct {
		path string
		kind SourceKind
	}{{o.Path, FromFlag}, {getenv(EnvPath), FromEnv}}
	for _, e := range explicit {
		if e.path == "" {
			continue
		}
		return loadPath(embedderID, e.path, e.kind, o.AnyEmbedder)
	}
	var path string
	if o.Dir != "" {
		path = filepath.Join(o.Dir, Key(embedderID)+".json")
	} else if p, err := DefaultPath(embedderID); err == nil {
		path = p
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return loadPath(embedderID, path, FromUser, o.AnyEmbedder)
		}
	}
	if f, exact, ok := Shipped(embedderID); ok {
		src := Source{Kind: FromShipped, File: f}
		if !exact {
			src.Warning = fmt.Sprintf("the shipped thresholds were tuned for %s, not %s: run `toolsrv tune` for this model", f.Embedder, embedderID)
		}
		return f.Policy, src, nil
	}
	return Fallback(), Source{Kind: FromFallback, Warning: fmt.Sprintf("no thresholds for embedder %s: using conservative defaults; run `toolsrv tune` to calibrate them", embedderID)}, nil
}

func loadPath(embedderID, path string, kind SourceKind, any bool) (Policy, Source, error) {
	f, err := ReadFile(path)
	if err != nil {
		return Policy{}, Source{}, fmt.Errorf("thresholds (%s): %w", kind, err)
	}
	if !any && f.Embedder != embedderID {
		return Policy{}, Source{}, fmt.Errorf("thresholds %s were tuned for embedder %q, not %q: run `toolsrv tune` for this embedder or point --thresholds elsewhere", path, f.Embedder, embedderID)
	}
	return f.Policy, Source{Kind: kind, Path: path, File: f}, nil
}

// LexicalWeightWarning says, when the thresholds were tuned with another
// hybrid lexical weight than w (the index's Options.LexicalWeight), that
// their scores do not mean the same; "" when they match or are unknown.
func (s Source) LexicalWeightWarning(w float64) string {
	if s.File == nil || s.File.Tuning == nil || s.File.Tuning.LexicalWeight == 0 {
		return ""
	}
	if t := s.File.Tuning.LexicalWeight; math.Abs(t-w) > 1e-9 {
		return fmt.Sprintf("the thresholds were tuned with lexical weight %.2f, not %.2f: run `toolsrv tune --lexical-weight %.2f`", t, w, w)
	}
	return ""
}
