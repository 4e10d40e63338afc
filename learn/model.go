// Package learn is toolsrv's learned last step: a small model, trained
// offline on request → tool pairs (see learn/MODEL.md and train/laststep), that
// re-scores the best candidates of the hybrid ranking and estimates whether
// any tool of the catalog serves the request at all (answerability).
//
// The package holds only the model and its arithmetic; the index computes
// the features (index/laststep.go) in the order this package defines, and
// train/laststep fits the weights with the index's own features, so training
// and serving can never disagree on what a feature means.
//
// Two linear models, both logistic:
//
//   - the candidate model scores each of the Pool best hybrid candidates
//     (Cand* features: field-level lexical matches, dense cosine and its
//     standing in the pool, coverage of the query's rare words, rank and
//     margins); the scores are turned into shares with a softmax over the
//     pool (a conditional logit), which is what it was trained for: pick
//     the tool that serves the request among the candidates;
//   - the answerability model maps query-level features (Ans*: the best
//     candidate's logit and share, the best hybrid score, how much of the
//     query the catalog knows, ...) to the probability that some tool of
//     the catalog serves the request.
//
// A tool's learned score is answerability × its share: the probability that
// it is the tool that serves the request. It is in [0,1] and comparable
// across queries, like the hybrid score it replaces.
//
// The answerability is calibrated per catalog (Calib): a fixed set of
// off-topic requests (Calib.Probes) is ranked against the catalog when the
// index is built, and a request's answerability comes from where its
// answerability logit stands among theirs. What a score level means
// depends on the catalog (a large catalog of near-identical tools matches
// everything a little; a catalog of a dozen tools matches an off-topic
// request with nothing); the probes measure that without labels.
package learn

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/toolsrv/toolsrv/embed/embedder"
)

// Candidate features, in the order of a candidate's feature vector.
const (
	CandScore       = iota // hybrid score (α·lexical + (1−α)·dense)
	CandLexical            // calibrated lexical score
	CandDense              // calibrated dense score
	CandCosBg              // cosine − the query's mean cosine over the catalog
	CandZPool              // (cosine − pool mean) / pool standard deviation
	CandCovName            // IDF share of the query's words found in the name
	CandCovDesc            // ... in the description
	CandCovKeywords        // ... in the keywords
	CandCovArgs            // ... in the argument names and descriptions
	CandCovAll             // ... anywhere in the document (prompt included)
	CandRare               // 1 if the document has the query's rarest word the catalog knows
	CandNameHit            // share of the name's words that the query has
	CandRank               // log2(1 + rank in the hybrid ranking), rank from 0
	CandMarginNext         // hybrid score − the next candidate's
	CandGapTop             // best hybrid score − this one's
	CandLexRank            // log2(1 + rank by lexical score within the pool)
	CandDenseRank          // log2(1 + rank by dense score within the pool)
	CandTermMean           // query words' cosine with the tool above their catalog mean, weighted mean
	CandTermMin            // ... the least covered query word's
	CandTermRel            // ... relative to the pool's best tool for each word, weighted mean
	NumCand
)

// Query-level features (answerability), in order.
const (
	AnsLogit      = iota // the best candidate's logit
	AnsShare             // its softmax share over the pool
	AnsLogitGap          // best logit − second best logit
	AnsEntropy           // entropy of the shares (nats)
	AnsScore             // best hybrid score
	AnsLexical           // its lexical score
	AnsDense             // its dense score
	AnsCosBg             // its cosine above the background
	AnsCovAll            // its coverage of the query's words
	AnsCovName           // its name coverage
	AnsNameHit           // share of its name's words in the query
	AnsUnknown           // IDF share of the query's words no tool has
	AnsTerms             // log(1 + number of distinct query words)
	AnsCatalog           // log10(number of tools)
	AnsMaxLexical        // best lexical score in the pool
	AnsMaxDense          // best dense score in the pool
	AnsLSE               // log Σ exp(logit) over the pool: evidence that some candidate fits
	AnsSecond            // the second best logit
	AnsTermMean          // the best candidate's CandTermMean
	AnsTermMin           // its CandTermMin
	NumAns
)

// CandNames and AnsNames name the features (model files, reports).
var (
	CandNames = [NumCand]string{"score", "lexical", "dense", "cosBg", "zPool", "covName", "covDesc", "covKeywords",
		"covArgs", "covAll", "rare", "nameHit", "rank", "marginNext", "gapTop", "lexRank", "denseRank",
		"termMean", "termMin", "termRel"}
	AnsNames = [NumAns]string{"logit", "share", "logitGap", "entropy", "score", "lexical", "dense", "cosBg", "covAll",
		"covName", "nameHit", "unknown", "terms", "catalog", "maxLexical", "maxDense", "lse", "second", "termMean", "termMin"}
)

// Linear is a linear function of standardised features:
// B + Σ W[i]·(x[i] − Mean[i]) / Scale[i].
type Linear struct {
	Features []string  `json:"features"`
	Mean     []float64 `json:"mean"`
	Scale    []float64 `json:"scale"`
	W        []float64 `json:"w"`
	B        float64   `json:"b"`
}

// Eval returns the linear function's value at x.
func (l *Linear) Eval(x []float64) float64 {
	s := l.B
	for i, w := range l.W {
		s += w * (x[i] - l.Mean[i]) / l.Scale[i]
	}
	return s
}

func (l *Linear) check(names []string) error {
	n := len(names)
	if len(l.W) != n || len(l.Mean) != n || len(l.Scale) != n {
		return fmt.Errorf("%d weights, %d means, %d scales for %d features", len(l.W), len(l.Mean), len(l.Scale), n)
	}
	if len(l.Features) != 0 && strings.Join(l.Features, ",") != strings.Join(names, ",") {
		return fmt.Errorf("features %v, this toolsrv computes %v", l.Features, names)
	}
	for i := range n {
		if l.Scale[i] <= 0 || math.IsNaN(l.Scale[i]) || math.IsNaN(l.W[i]) || math.IsNaN(l.Mean[i]) {
			return fmt.Errorf("feature %s: scale %v, weight %v, mean %v", names[i], l.Scale[i], l.W[i], l.Mean[i])
		}
	}
	return nil
}

// Model is the learned last step.
type Model struct {
	// ID names the model ("learn/v1-<digest>"), Embedder the embedder
	// family whose dense scores it was trained on ("builtin/v1"): the
	// features of another embedder mean something else.
	ID       string `json:"id"`
	Embedder string `json:"embedder"`
	// Pool is how many of the hybrid ranking's best tools are re-scored.
	Pool int    `json:"pool"`
	Cand Linear `json:"candidate"`
	Ans  Linear `json:"answerable"`
	// AnsTrees, if set, replaces Ans: boosted trees over the same features.
	AnsTrees *Forest `json:"answerableTrees,omitempty"`
	// Calib, if set, calibrates the answerability per catalog.
	Calib *Calib `json:"calibration,omitempty"`
	// Training records how the model was made (free-form, for people).
	Training json.RawMessage `json:"training,omitempty"`
}

// Check says what is wrong with m, if anything.
func (m *Model) Check() error {
	var errs []error
	if m.Pool < 2 || m.Pool > 1000 {
		errs = append(errs, fmt.Errorf("pool %d: want 2…1000", m.Pool))
	}
	if m.Embedder == "" {
		errs = append(errs, errors.New("no embedder family"))
	}
	if err := m.Cand.check(CandNames[:]); err != nil {
		errs = append(errs, fmt.Errorf("candidate model: %w", err))
	}
	if err := m.Ans.check(AnsNames[:]); err != nil {
		errs = append(errs, fmt.Errorf("answerability model: %w", err))
	}
	if m.AnsTrees != nil {
		if err := m.AnsTrees.check(NumAns); err != nil {
			errs = append(errs, fmt.Errorf("answerability trees: %w", err))
		}
	}
	if c := m.Calib; c != nil {
		switch {
		case len(c.Probes) < 10 || len(c.Probes) > 5000:
			errs = append(errs, fmt.Errorf("calibration: %d probe requests, want 10…5000", len(c.Probes)))
		case math.IsNaN(c.A) || math.IsNaN(c.B) || math.IsInf(c.A, 0) || math.IsInf(c.B, 0):
			errs = append(errs, fmt.Errorf("calibration: a %v, b %v", c.A, c.B))
		}
	}
	return errors.Join(errs...)
}

// Parse decodes and checks a model file.
func Parse(data []byte) (*Model, error) {
	var m Model
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding the learned model: %w", err)
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("learned model %s: %w", m.ID, err)
	}
	return &m, nil
}

// Applies says whether m was trained on the features of embedder ID id:
// the same family (embedder.Family: the ID without a trailing model digest
// and fit suffix).
func (m *Model) Applies(id string) bool {
	return m != nil && embedder.Family(id) == embedder.Family(m.Embedder)
}

// Scores computes, for a pool of candidates (cand[i] holds NumCand
// features, best hybrid first), each candidate's logit (into logits) and
// share (into shares, summing to 1), and returns the query-level features
// the answerability model reads, with qf holding the query's own part
// (AnsUnknown, AnsTerms, AnsCatalog) on entry.
func (m *Model) Scores(cand [][NumCand]float64, logits, shares []float64, qf *[NumAns]float64) {
	mx := math.Inf(-1)
	for i := range cand {
		logits[i] = m.Cand.Eval(cand[i][:])
		mx = max(mx, logits[i])
	}
	var z float64
	for i := range cand {
		shares[i] = math.Exp(logits[i] - mx)
		z += shares[i]
	}
	best, second := -1, -1
	var ent float64
	for i := range cand {
		shares[i] /= z
		if p := shares[i]; p > 0 {
			ent -= p * math.Log(p)
		}
		switch {
		case best < 0 || logits[i] > logits[best]:
			best, second = i, best
		case second < 0 || logits[i] > logits[second]:
			second = i
		}
	}
	if best < 0 {
		return
	}
	b := &cand[best]
	qf[AnsLogit] = logits[best]
	qf[AnsShare] = shares[best]
	qf[AnsLogitGap] = 10 // a lone candidate wins by far
	qf[AnsSecond] = logits[best] - 10
	if second >= 0 {
		qf[AnsLogitGap] = min(10, logits[best]-logits[second])
		qf[AnsSecond] = logits[second]
	}
	qf[AnsLSE] = mx + math.Log(z)
	qf[AnsEntropy] = ent
	qf[AnsScore] = b[CandScore]
	qf[AnsLexical] = b[CandLexical]
	qf[AnsDense] = b[CandDense]
	qf[AnsCosBg] = b[CandCosBg]
	qf[AnsCovAll] = b[CandCovAll]
	qf[AnsCovName] = b[CandCovName]
	qf[AnsNameHit] = b[CandNameHit]
	qf[AnsTermMean] = b[CandTermMean]
	qf[AnsTermMin] = b[CandTermMin]
	qf[AnsMaxLexical], qf[AnsMaxDense] = 0, 0
	for i := range cand {
		qf[AnsMaxLexical] = max(qf[AnsMaxLexical], cand[i][CandLexical])
		qf[AnsMaxDense] = max(qf[AnsMaxDense], cand[i][CandDense])
	}
}

// Answerable is the probability that some tool of the catalog serves the
// request, from the query-level features, before the per-catalog
// calibration (Calibrated).
func (m *Model) Answerable(qf *[NumAns]float64) float64 {
	return Sigmoid(m.Logit(qf))
}

// Logit is the answerability model's logit (uncalibrated).
func (m *Model) Logit(qf *[NumAns]float64) float64 {
	if m.AnsTrees != nil {
		return m.AnsTrees.Eval(qf[:])
	}
	return m.Ans.Eval(qf[:])
}

// Calib calibrates the answerability per catalog with off-topic requests.
type Calib struct {
	// Probes are requests no tool of a typical catalog serves (out-of-scope
	// and chit-chat requests of the training data). The index ranks them
	// against its catalog and keeps their answerability logits (sorted).
	Probes []string `json:"probes"`
	// A request whose logit exceeds a share u of the probes' (ProbeShare)
	// is answerable with probability σ(A·logit(u) + B).
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// ProbeShare is the share of the sorted probe logits that z reaches,
// interpolated between neighbours and kept inside (0,1): with i of the n
// logits at most z, (i + f) / (n+1) where f ∈ [0,1) is z's position
// between the i-th and the (i+1)-th smallest; 0.5/(n+1) below all and
// (n+0.5)/(n+1) at or above all.
func ProbeShare(sorted []float64, z float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(z) {
		return 0.5
	}
	i := sort.Search(n, func(k int) bool { return sorted[k] > z })
	switch {
	case i == 0:
		return 0.5 / float64(n+1)
	case i >= n:
		return (float64(n) + 0.5) / float64(n+1)
	}
	lo, hi := sorted[i-1], sorted[i] // lo ≤ z < hi
	return (float64(i) + (z-lo)/(hi-lo)) / float64(n+1)
}

// Calibrated is the answerability of a request with logit z in a catalog
// whose probes have the sorted logits probes. Without a calibration (or
// without probe logits: the index could not rank them) it is σ(z).
func (m *Model) Calibrated(z float64, probes []float64) float64 {
	if m.Calib == nil || len(probes) == 0 {
		return Sigmoid(z)
	}
	u := ProbeShare(probes, z)
	return Sigmoid(m.Calib.A*math.Log(u/(1-u)) + m.Calib.B)
}

// Sigmoid is the logistic function.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

//go:embed model.json
var shipped []byte

var (
	defOnce sync.Once
	def     *Model
	defErr  error
)

// Default returns the model shipped in the binary (learn/model.json).
func Default() (*Model, error) {
	defOnce.Do(func() { def, defErr = Parse(shipped) })
	return def, defErr
}
