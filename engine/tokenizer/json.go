package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxVocab bounds vocabulary sizes so a corrupt file cannot make the loader allocate wildly.
const maxVocab = 1 << 24

type jsonFile struct {
	Version       string          `json:"version"`
	Truncation    json.RawMessage `json:"truncation"`
	AddedTokens   []jsonAdded     `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

type jsonAdded struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type jsonPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// jsonComponent holds the fields of every supported normalizer, pre-tokenizer, decoder and
// post-processor; Type says which are meaningful.
type jsonComponent struct {
	Type string `json:"type"`

	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`

	Prepend    string       `json:"prepend"`
	Pattern    *jsonPattern `json:"pattern"`
	Content    string       `json:"content"`
	StripLeft  bool         `json:"strip_left"`
	StripRight bool         `json:"strip_right"`

	Behavior         string  `json:"behavior"`
	Invert           bool    `json:"invert"`
	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	Replacement      string  `json:"replacement"`
	PrependScheme    *string `json:"prepend_scheme"`
	Split            *bool   `json:"split"`
	IndividualDigits bool    `json:"individual_digits"`
	Delimiter        string  `json:"delimiter"`

	Start int `json:"start"`
	Stop  int `json:"stop"`

	Single        []map[string]jsonTemplateRef `json:"single"`
	SpecialTokens map[string]jsonSpecial       `json:"special_tokens"`
	Sep           []json.RawMessage            `json:"sep"`
	Cls           []json.RawMessage            `json:"cls"`
}

type jsonTemplateRef struct {
	ID string `json:"id"`
}

type jsonSpecial struct {
	IDs []int64 `json:"ids"`
}

type jsonBPE struct {
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int64 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

func isNull(m json.RawMessage) bool {
	m = bytes.TrimSpace(m)
	return len(m) == 0 || bytes.Equal(m, []byte("null"))
}

// MaxJSONBytes bounds a tokenizer.json read from disk: the largest in use (Gemma 3's, 262k
// tokens) is 33 MB.
const MaxJSONBytes = 64 << 20

// FromJSON loads a HuggingFace tokenizer.json.
func FromJSON(data []byte) (*Tokenizer, error) {
	var f jsonFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: tokenizer.json: %w", err)
	}
	if f.Version != "" && f.Version != "1.0" {
		return nil, fmt.Errorf("tokenizer: unknown tokenizer.json version %q", f.Version)
	}
	if !isNull(f.Truncation) {
		return nil, errors.New("tokenizer: truncation is not supported")
	}
	if isNull(f.Model) {
		return nil, errors.New("tokenizer: tokenizer.json has no model")
	}
	// The type first: other models' fields (Unigram's vocab is a list) do not fit BPE's.
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(f.Model, &head); err != nil {
		return nil, fmt.Errorf("tokenizer: model: %w", err)
	}
	if head.Type != "" && head.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer: unsupported model type %s (only BPE is)", head.Type)
	}
	var jm jsonBPE
	if err := json.Unmarshal(f.Model, &jm); err != nil {
		return nil, fmt.Errorf("tokenizer: model: %w", err)
	}
	merges, err := parseMerges(jm.Merges)
	if err != nil {
		return nil, err
	}
	if jm.Dropout != nil && *jm.Dropout != 0 {
		return nil, errors.New("tokenizer: BPE dropout is not supported")
	}
	vocab := make(map[string]int32, len(jm.Vocab))
	for s, id := range jm.Vocab {
		if id < 0 || id >= maxVocab {
			return nil, fmt.Errorf("tokenizer: token %q: id %d out of range", s, id)
		}
		vocab[s] = int32(id)
	}
	m := &bpe{
		vocab:        vocab,
		unk:          -1,
		fuseUnk:      jm.FuseUnk,
		byteFallback: jm.ByteFallback,
		ignoreMerges: jm.IgnoreMerges,
	}
	if jm.ContinuingSubwordPrefix != nil {
		m.prefix = *jm.ContinuingSubwordPrefix
	}
	if jm.EndOfWordSuffix != nil {
		m.suffix = *jm.EndOfWordSuffix
	}
	if jm.UnkToken != nil {
		id, ok := vocab[*jm.UnkToken]
		if !ok {
			return nil, fmt.Errorf("tokenizer: unk_token %q is not in the vocabulary", *jm.UnkToken)
		}
		m.unk = id
	}
	if err := m.setMerges(merges); err != nil {
		return nil, err
	}
	m.setByteIDs()
	m.chunks = m.prefix == "" && m.suffix == "" && metaChunks(vocab)

	t := &Tokenizer{model: m, vocab: vocab, bos: -1, eos: -1}
	if t.normalizer, err = parseNormalizer(f.Normalizer, 0); err != nil {
		return nil, fmt.Errorf("tokenizer: normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer, 0); err != nil {
		return nil, fmt.Errorf("tokenizer: pre_tokenizer: %w", err)
	}
	if t.decoder, err = parseDecoder(f.Decoder, 0); err != nil {
		return nil, fmt.Errorf("tokenizer: decoder: %w", err)
	}
	// Ids as HF assigns them: a token already in the vocabulary keeps its id, others get the
	// next ids after the vocabulary in file order (the file's "id" fields are not consulted);
	// a repeated content keeps its first id and takes the later flags.
	added := make([]addedToken, 0, len(f.AddedTokens))
	index := map[string]int{}
	next := int32(len(vocab))
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			continue
		}
		tok := addedToken{content: a.Content, singleWord: a.SingleWord, lstrip: a.LStrip,
			rstrip: a.RStrip, normalized: a.Normalized, special: a.Special}
		if i, ok := index[a.Content]; ok {
			tok.id = added[i].id
			tok.special = tok.special || added[i].special
			added[i] = tok
			continue
		}
		if id, ok := vocab[a.Content]; ok {
			tok.id = id
		} else {
			if next >= maxVocab {
				return nil, errors.New("tokenizer: too many added tokens")
			}
			tok.id = next
			next++
		}
		index[a.Content] = len(added)
		added = append(added, tok)
	}
	if err := t.setTokens(added); err != nil {
		return nil, err
	}
	t.pieces = t.streamPieces()
	var pp postProcessor
	if pp, err = t.parsePost(f.PostProcessor, 0); err != nil {
		return nil, fmt.Errorf("tokenizer: post_processor: %w", err)
	}
	t.post = pp
	t.guessBOSEOS()
	return t, nil
}

func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var legacy []string
	if err := json.Unmarshal(raw, &legacy); err == nil {
		out := make([][2]string, len(legacy))
		for i, l := range legacy {
			a, b, ok := strings.Cut(l, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("tokenizer: merge %d %q is not two tokens", i, l)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer: merges: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("tokenizer: merge %d has %d parts, want 2", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// setMerges builds the merge table. As in HF, a merge's result is a + b without b's
// continuing-subword prefix, every token must be in the vocabulary, and a repeated pair keeps
// its last rank.
func (m *bpe) setMerges(merges [][2]string) error {
	m.merges = make(map[uint64]mergeRule, len(merges))
	for rank, mg := range merges {
		a, ok1 := m.vocab[mg[0]]
		b, ok2 := m.vocab[mg[1]]
		if !ok1 || !ok2 {
			return fmt.Errorf("tokenizer: merge %q %q: token not in vocabulary", mg[0], mg[1])
		}
		right := mg[1]
		if m.prefix != "" {
			right = strings.TrimPrefix(right, m.prefix)
		}
		id, ok := m.vocab[mg[0]+right]
		if !ok {
			return fmt.Errorf("tokenizer: merge %q %q: result not in vocabulary", mg[0], mg[1])
		}
		m.merges[pairKey(a, b)] = mergeRule{rank: int32(rank), id: id}
	}
	return nil
}

func (m *bpe) setByteIDs() {
	for b := range m.byteIDs {
		id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			id = -1
		}
		m.byteIDs[b] = id
	}
}

// setTokens installs the added tokens and builds the id -> token table.
func (t *Tokenizer) setTokens(added []addedToken) error {
	n := 0
	for _, id := range t.vocab {
		n = max(n, int(id)+1)
	}
	for _, a := range added {
		n = max(n, int(a.id)+1)
	}
	if n > 4*(len(t.vocab)+len(added))+1024 {
		return fmt.Errorf("tokenizer: ids up to %d for %d tokens: too sparse", n-1, len(t.vocab)+len(added))
	}
	t.tokens = make([]string, n)
	have := make([]bool, n)
	for s, id := range t.vocab {
		// Several strings with one id: keep the smallest, so the choice is deterministic.
		if !have[id] || s < t.tokens[id] {
			t.tokens[id] = s
		}
		have[id] = true
	}
	t.added = addedVocab{byContent: map[string]*addedToken{}, byID: map[int32]*addedToken{}}
	t.special = map[int32]bool{}
	var raw, normd []matchPattern
	for i := range added {
		a := &added[i]
		a.decoded = a.content
		if _, dup := t.added.byContent[a.content]; dup {
			continue
		}
		t.added.byContent[a.content] = a
		t.added.byID[a.id] = a
		if !have[a.id] {
			t.tokens[a.id] = a.content
		}
		if a.special {
			t.special[a.id] = true
		}
		if a.normalized {
			if t.normalizer != nil {
				a.decoded, _ = t.normalizer.normalize(a.content, 0)
			}
			normd = append(normd, matchPattern{a.decoded, a})
		} else {
			raw = append(raw, matchPattern{a.content, a})
		}
	}
	t.added.raw = newTokenMatcher(raw)
	t.added.norm = newTokenMatcher(normd)
	return nil
}

// guessBOSEOS takes BOS/EOS from the post-processor's template, else EOS from the well-known
// names of special added tokens (a plain vocabulary entry such as Qwen's "</s>" does not count).
func (t *Tokenizer) guessBOSEOS() {
	var tpl *postTemplate
	switch p := t.post.(type) {
	case *postTemplate:
		tpl = p
	case postSequence:
		for _, q := range p {
			if x, ok := q.(*postTemplate); ok {
				tpl = x
			}
		}
	}
	if tpl != nil && len(tpl.before) > 0 {
		t.bos = tpl.before[0]
	}
	if tpl != nil && len(tpl.after) > 0 {
		t.eos = tpl.after[len(tpl.after)-1]
		return
	}
	for _, name := range []string{"</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "<|eot_id|>", "<|im_end|>"} {
		if a, ok := t.added.byContent[name]; ok && a.special {
			t.eos = a.id
			return
		}
	}
}

// ApplyConfig sets BOS and EOS from a tokenizer_config.json ("bos_token"/"eos_token", each a
// string, an {"content": ...} object, or null), which is where HF keeps them. It is part of
// loading: call it before the tokenizer is shared. On error nothing changes.
func (t *Tokenizer) ApplyConfig(data []byte) error {
	var c map[string]json.RawMessage
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("tokenizer: tokenizer_config.json: %w", err)
	}
	bos, eos := t.bos, t.eos
	for key, dst := range map[string]*int32{"bos_token": &bos, "eos_token": &eos} {
		raw, ok := c[key]
		if !ok {
			continue
		}
		if isNull(raw) {
			*dst = -1
			continue
		}
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			var obj struct{ Content string }
			if err := json.Unmarshal(raw, &obj); err != nil {
				return fmt.Errorf("tokenizer: tokenizer_config.json: %s: %w", key, err)
			}
			name = obj.Content
		}
		id, ok := t.TokenID(name)
		if !ok {
			return fmt.Errorf("tokenizer: tokenizer_config.json: %s %q is not a token", key, name)
		}
		*dst = id
	}
	t.bos, t.eos = bos, eos
	return nil
}

// maxDepth bounds nesting of Sequence components.
const maxDepth = 16

func parseComponent(raw json.RawMessage, depth int) (*jsonComponent, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	var c jsonComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func parsePattern(p *jsonPattern) (pattern, error) {
	switch {
	case p == nil:
		return pattern{}, errors.New("missing pattern")
	case p.Regex != nil:
		re, err := compileRegex(*p.Regex)
		if err != nil {
			return pattern{}, err
		}
		return pattern{re: re}, nil
	case p.String != nil:
		return pattern{lit: *p.String}, nil
	}
	return pattern{}, errors.New("pattern has neither String nor Regex")
}

func oneRune(s, what string) (rune, error) {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || n != len(s) || r == utf8.RuneError {
		return 0, fmt.Errorf("%s %q must be one character", what, s)
	}
	return r, nil
}

// parseSequence parses the components of a Sequence one level deeper with parse, leaving out
// those that do nothing (nil).
func parseSequence[T comparable](raws []json.RawMessage, depth int, parse func(json.RawMessage, int) (T, error)) ([]T, error) {
	var seq []T
	var none T
	for _, r := range raws {
		x, err := parse(r, depth+1)
		if err != nil {
			return nil, err
		}
		if x != none {
			seq = append(seq, x)
		}
	}
	return seq, nil
}

func parseNormalizer(raw json.RawMessage, depth int) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, depth)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence(c.Normalizers, depth, parseNormalizer)
		if err != nil {
			return nil, err
		}
		return normSequence(seq), nil
	case "NFC":
		return normUnicode{norm.NFC}, nil
	case "NFD":
		return normUnicode{norm.NFD}, nil
	case "NFKC":
		return normUnicode{norm.NFKC}, nil
	case "NFKD":
		return normUnicode{norm.NFKD}, nil
	case "Lowercase":
		return normLowercase{}, nil
	case "Strip":
		return normStrip{left: c.StripLeft, right: c.StripRight}, nil
	case "StripAccents":
		return normStripAccents{}, nil
	case "Prepend":
		return normPrepend{prefix: c.Prepend}, nil
	case "Replace":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return normReplace{pat: p, content: c.Content}, nil
	case "ByteLevel":
		return normByteLevel{}, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported", c.Type)
}

var behaviors = map[string]splitBehavior{
	"Removed": splitRemoved, "Isolated": splitIsolated, "MergedWithPrevious": splitMergedWithPrevious,
	"MergedWithNext": splitMergedWithNext, "Contiguous": splitContiguous,
}

func parseBehavior(s string, def splitBehavior) (splitBehavior, error) {
	if s == "" {
		return def, nil
	}
	b, ok := behaviors[s]
	if !ok {
		return 0, fmt.Errorf("unknown split behavior %q", s)
	}
	return b, nil
}

func parsePrependScheme(c *jsonComponent) (string, error) {
	scheme := "always"
	if c.PrependScheme != nil {
		scheme = *c.PrependScheme
	}
	switch scheme {
	case "always", "first", "never":
	default:
		return "", fmt.Errorf("unknown prepend_scheme %q", scheme)
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
		if scheme != "never" && c.PrependScheme != nil {
			return "", errors.New("add_prefix_space does not match declared prepend_scheme")
		}
		scheme = "never"
	}
	return scheme, nil
}

func parsePreTokenizer(raw json.RawMessage, depth int) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, depth)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence(c.Pretokenizers, depth, parsePreTokenizer)
		if err != nil {
			return nil, err
		}
		return newPreSequence(seq...), nil
	case "Split":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pre-tokenizer Split: %w", err)
		}
		b, err := parseBehavior(c.Behavior, splitRemoved)
		if err != nil {
			return nil, err
		}
		if c.Behavior == "" {
			return nil, errors.New("pre-tokenizer Split: missing behavior")
		}
		return &preSplit{pat: p, invert: c.Invert, behavior: b}, nil
	case "ByteLevel":
		q := &preByteLevel{addPrefixSpace: true, useRegex: true}
		if c.AddPrefixSpace != nil {
			q.addPrefixSpace = *c.AddPrefixSpace
		}
		if c.UseRegex != nil {
			q.useRegex = *c.UseRegex
		}
		return q, nil
	case "Metaspace":
		if _, err := oneRune(c.Replacement, "Metaspace replacement"); err != nil {
			return nil, err
		}
		scheme, err := parsePrependScheme(c)
		if err != nil {
			return nil, err
		}
		split := true
		if c.Split != nil {
			split = *c.Split
		}
		return &preMetaspace{replacement: c.Replacement, prepend: scheme, split: split}, nil
	case "Digits":
		return newDigits(c.IndividualDigits), nil
	case "Punctuation":
		b, err := parseBehavior(c.Behavior, splitIsolated)
		if err != nil {
			return nil, err
		}
		return &preSplit{pat: pattern{pred: isPunctuation}, behavior: b}, nil
	case "Whitespace":
		return &preSplit{pat: pattern{re: whitespaceRegex}, invert: true, behavior: splitRemoved}, nil
	case "WhitespaceSplit":
		return &preSplit{pat: pattern{pred: unicode.IsSpace}, behavior: splitRemoved}, nil
	case "BertPreTokenizer":
		return newPreSequence(
			&preSplit{pat: pattern{pred: unicode.IsSpace}, behavior: splitRemoved},
			&preSplit{pat: pattern{pred: isPunctuation}, behavior: splitIsolated},
		), nil
	case "CharDelimiterSplit":
		r, err := oneRune(c.Delimiter, "CharDelimiterSplit delimiter")
		if err != nil {
			return nil, err
		}
		return &preSplit{pat: pattern{pred: func(x rune) bool { return x == r }}, behavior: splitRemoved}, nil
	}
	return nil, fmt.Errorf("pre-tokenizer type %q is not supported", c.Type)
}

func parseDecoder(raw json.RawMessage, depth int) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, depth)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence(c.Decoders, depth, parseDecoder)
		if err != nil {
			return nil, err
		}
		return decSequence(seq), nil
	case "Replace":
		p, err := parsePattern(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		return decReplace{pat: p, content: c.Content}, nil
	case "ByteFallback":
		return decByteFallback{}, nil
	case "Fuse":
		return decFuse{}, nil
	case "Strip":
		r, err := oneRune(c.Content, "Strip content")
		if err != nil {
			return nil, err
		}
		if c.Start < 0 || c.Stop < 0 || c.Start > math.MaxInt32 || c.Stop > math.MaxInt32 {
			return nil, errors.New("decoder Strip: bad start/stop")
		}
		return decStrip{content: r, start: c.Start, stop: c.Stop}, nil
	case "ByteLevel":
		return decByteLevel{}, nil
	case "Metaspace":
		r, err := oneRune(c.Replacement, "Metaspace replacement")
		if err != nil {
			return nil, err
		}
		scheme, err := parsePrependScheme(c)
		if err != nil {
			return nil, err
		}
		return decMetaspace{replacement: r, prepend: scheme}, nil
	}
	return nil, fmt.Errorf("decoder type %q is not supported", c.Type)
}

func (t *Tokenizer) parsePost(raw json.RawMessage, depth int) (postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, depth)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := parseSequence(c.Processors, depth, t.parsePost)
		if err != nil {
			return nil, err
		}
		return postSequence(seq), nil
	case "ByteLevel":
		return nil, nil // only adjusts offsets
	case "TemplateProcessing":
		p := &postTemplate{}
		seen := false
		for _, item := range c.Single {
			if len(item) != 1 {
				return nil, errors.New("TemplateProcessing: bad template piece")
			}
			for kind, ref := range item {
				switch kind {
				case "Sequence":
					if ref.ID != "A" || seen {
						return nil, fmt.Errorf("TemplateProcessing: single template uses sequence %q", ref.ID)
					}
					seen = true
				case "SpecialToken":
					sp, ok := c.SpecialTokens[ref.ID]
					if !ok {
						return nil, fmt.Errorf("TemplateProcessing: special token %q is not defined", ref.ID)
					}
					for _, id := range sp.IDs {
						if id < 0 || id >= int64(len(t.tokens)) {
							return nil, fmt.Errorf("TemplateProcessing: special token %q: id %d out of range", ref.ID, id)
						}
						if seen {
							p.after = append(p.after, int32(id))
						} else {
							p.before = append(p.before, int32(id))
						}
					}
				default:
					return nil, fmt.Errorf("TemplateProcessing: unknown template piece %q", kind)
				}
			}
		}
		if !seen {
			return nil, errors.New("TemplateProcessing: single template has no $A")
		}
		return p, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := t.pairToken(c.Cls)
		if err != nil {
			return nil, fmt.Errorf("%s: cls: %w", c.Type, err)
		}
		sep, err := t.pairToken(c.Sep)
		if err != nil {
			return nil, fmt.Errorf("%s: sep: %w", c.Type, err)
		}
		return &postTemplate{before: []int32{cls}, after: []int32{sep}}, nil
	}
	return nil, fmt.Errorf("post-processor type %q is not supported", c.Type)
}

// pairToken reads a ["token", id] pair.
func (t *Tokenizer) pairToken(pair []json.RawMessage) (int32, error) {
	if len(pair) != 2 {
		return 0, errors.New("want [token, id]")
	}
	var id int64
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, err
	}
	if id < 0 || id >= int64(len(t.tokens)) {
		return 0, fmt.Errorf("id %d out of range", id)
	}
	return int32(id), nil
}
