package index

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// cacheMagic starts every index file; the number is the format version.
const cacheMagic = "toolsrv-index 4\n"

// cacheHeader is the first JSON line of an index file. The body that follows
// is the vectors as store.export writes them.
type cacheHeader struct {
	// Embedder is the base embedder's ID; Model the ID of the embedder that
	// made the vectors (a fitted embedder's ID includes its fit digest).
	Embedder string `json:"embedder"`
	Model    string `json:"model"`
	Dim      int    `json:"dim"`
	// State is the fitted embedder's state (embed.Fitted.State), if any.
	State []byte `json:"state,omitempty"`
	// FitDocs is the catalog size at the fit; Drift counts documents
	// embedded since, so that a large change triggers a re-fit.
	FitDocs int `json:"fitDocs,omitempty"`
	Drift   int `json:"drift,omitempty"`
	// Probes are the probe logits of the answerability's calibration
	// (probes.go), if any.
	Probes *cacheProbes `json:"probes,omitempty"`
	// BodyCheck detects a truncated or corrupted body.
	fileio.BodyCheck
}

// cacheProbes is probeState as the cache file holds it.
type cacheProbes struct {
	Model  string    `json:"model"`
	Digest uint64    `json:"digest"`
	Logits []float64 `json:"logits"`
}

// DefaultCacheDir is where an embedder's index files live by default:
// os.UserCacheDir()/toolsrv/<embedder ID with unsafe characters replaced>.
func DefaultCacheDir(embedderID string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory (set $XDG_CACHE_HOME or $HOME): %w", err)
	}
	return CacheDirUnder(base, embedderID), nil
}

// CacheDirUnder is DefaultCacheDir for a given user cache directory.
func CacheDirUnder(userCacheDir, embedderID string) string {
	return filepath.Join(userCacheDir, "toolsrv", safeName(embedderID))
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// cacheFile names the index file of one embedder and one set of tool
// directories: catalogs from different directories (say, two projects, or
// eval corpora) and different embedders sharing a directory keep separate
// files instead of evicting each other.
func cacheFile(dir, embedderID string, toolDirs []string) string {
	sum := sha256.Sum256([]byte(embedderID + "\x00" + strings.Join(toolDirs, "\x00")))
	return filepath.Join(dir, "index-"+hex.EncodeToString(sum[:8])+".gob")
}

// writeCache writes header and the body export writes (the vectors)
// atomically, streaming the body (fileio.WriteFramed: at 100,000
// tools it is 134 MB, which a buffer would hold twice over while it grew).
func writeCache(path string, h cacheHeader, export func(io.Writer) error) error {
	if err := fileio.WriteFramed(path, 0o600, cacheMagic, &h, export); err != nil {
		return fmt.Errorf("writing index cache: %w", err)
	}
	return nil
}

// maxCacheSize bounds the index file read into memory. A catalog of 100,000
// tools with 768-dimensional vectors makes a file of about 0.6 GB.
const maxCacheSize = 4 << 30

// readCache reads and verifies an index file (fileio.ReadFramed), at most
// maxCacheSize bytes of it.
func readCache(path string) (cacheHeader, []byte, error) {
	var h cacheHeader
	body, err := fileio.ReadFramed(path, cacheMagic, &h, maxCacheSize)
	return h, body, err
}
