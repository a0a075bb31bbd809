package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// decoder turns token strings back into text pieces (HF's Decoder::decode_chain); the final text
// is their concatenation. It may reuse toks for its result: callers pass a slice they own.
type decoder interface {
	decodeChain(toks []string) []string
}

type decSequence []decoder

func (d decSequence) decodeChain(toks []string) []string {
	for _, x := range d {
		toks = x.decodeChain(toks)
	}
	return toks
}

// decReplace replaces a pattern in every token.
type decReplace struct {
	pat     pattern
	content string
}

func (d decReplace) decodeChain(toks []string) []string {
	for i, t := range toks {
		toks[i] = d.pat.replaceAll(t, d.content)
	}
	return toks
}

// decByteFallback turns runs of <0xXX> tokens into the text their bytes spell, or one U+FFFD
// per byte when the run is not valid UTF-8.
type decByteFallback struct{}

func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	h := t[3:5]
	if h[0] == '+' { // Rust's from_str_radix accepts a leading plus
		h = h[1:]
	}
	var v byte
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case '0' <= c && c <= '9':
			v = v*16 + c - '0'
		case 'a' <= c && c <= 'f':
			v = v*16 + c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = v*16 + c - 'A' + 10
		default:
			return 0, false
		}
	}
	return v, true
}

func (decByteFallback) decodeChain(toks []string) []string {
	// Results never outnumber inputs (a run of n bytes gives one string or n U+FFFD), so they
	// are written over toks.
	out := toks[:0]
	var buf [8]byte
	pending := buf[:0]
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range toks {
		if b, ok := parseByteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

func isByteToken(t string) bool {
	_, ok := parseByteToken(t)
	return ok
}

func hasByteFallback(d decoder) bool {
	switch d := d.(type) {
	case decByteFallback:
		return true
	case decSequence:
		for _, x := range d {
			if hasByteFallback(x) {
				return true
			}
		}
	}
	return false
}

// decFuse joins all tokens into one.
type decFuse struct{}

func (decFuse) decodeChain(toks []string) []string {
	if len(toks) == 0 {
		return toks
	}
	s := strings.Join(toks, "")
	return append(toks[:0], s)
}

// decStrip removes up to start leading and stop trailing copies of content from every token.
type decStrip struct {
	content     rune
	start, stop int
}

func (d decStrip) decodeChain(toks []string) []string {
	for i, t := range toks {
		for k := 0; k < d.start; k++ {
			r, n := utf8.DecodeRuneInString(t)
			if n == 0 || r != d.content {
				break
			}
			t = t[n:]
		}
		for k := 0; k < d.stop; k++ {
			r, n := utf8.DecodeLastRuneInString(t)
			if n == 0 || r != d.content {
				break
			}
			t = t[:len(t)-n]
		}
		toks[i] = t
	}
	return toks
}

// decByteLevel maps byte-level characters back to bytes and decodes them lossily as one string.
type decByteLevel struct{}

func (decByteLevel) decodeChain(toks []string) []string {
	var buf [64]byte
	b := buf[:0]
	for _, t := range toks {
		var ok bool
		if b, ok = byteLevelBytes(b, t); !ok {
			b = append(b, t...)
		}
	}
	if !utf8.Valid(b) {
		b = appendLossy(nil, b)
	}
	return append(toks[:0], string(b))
}

// decMetaspace turns the replacement character back into spaces, dropping it from the first
// token unless the prepend scheme is "never".
type decMetaspace struct {
	replacement rune
	prepend     string
}

func (d decMetaspace) decodeChain(toks []string) []string {
	for i, t := range toks {
		drop := i == 0 && d.prepend != "never"
		toks[i] = strings.Map(func(r rune) rune {
			if r != d.replacement {
				return r
			}
			if drop {
				return -1
			}
			return ' '
		}, t)
	}
	return toks
}

// StreamDecoder decodes a stream of ids incrementally. Next returns only complete UTF-8 text:
// bytes of a character split over several tokens are held until the character is complete
// (with ByteFallback, until the run of byte tokens ends, since one bad byte changes how the whole
// run decodes). The concatenation of everything Next and Flush return equals Decode of all the
// ids.
//
// Once the stream is settled (everything so far emitted and the last token plain, see
// streamPieces), a plain token's text is the tokenizer's precomputed piece and Next allocates
// nothing; other tokens take the general path, which decodes a short window of ids.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	byteRuns    bool    // the decoder has ByteFallback
	ids         []int32 // window: context tokens already emitted, then pending tokens
	prefix      string  // decoded text of the context tokens alone
	// lazy says prefix is not computed yet: the context is the single plain token ids[0] the
	// fast path emitted, and only the general path needs its text.
	lazy bool
	// settled says Decode of every id so far is exactly what was emitted and the last visible
	// token was plain, so the next plain token adds just its piece.
	settled bool
	toks    []string
}

// NewDecoder returns a streaming decoder.
func (t *Tokenizer) NewDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial, byteRuns: hasByteFallback(t.decoder)}
}

// Next adds one id and returns the newly completed text, possibly "".
func (d *StreamDecoder) Next(id int32) string {
	if d.settled && id >= 0 && int(id) < len(d.t.pieces) {
		if p := d.t.pieces[id]; p != "" {
			if d.skipSpecial && d.t.special[id] {
				return ""
			}
			// The general path would pick the same context: the shortest tail with text of
			// its own, which a plain token has.
			d.ids = append(d.ids[:0], id)
			d.lazy = true
			return p
		}
	}
	if _, ok := d.t.decodeText(id, d.skipSpecial); !ok {
		return "" // skipped ids must not become context: Decode never sees them
	}
	d.resolve()
	d.settled = false
	d.ids = append(d.ids, id)
	if d.byteRuns {
		if tok, _ := d.t.decodeText(id, d.skipSpecial); isByteToken(tok) {
			// ByteFallback renders a whole run of byte tokens at once, as text or as one U+FFFD
			// per byte if any byte is wrong, so nothing of a run is final until it ends.
			return ""
		}
	}
	s := d.decodeWindow()
	if strings.HasSuffix(s, "\uFFFD") || !strings.HasPrefix(s, d.prefix) {
		// An incomplete character (rendered U+FFFD until its last byte arrives): wait.
		return ""
	}
	out := s[len(d.prefix):]
	// Keep as context the shortest tail of the window that decodes to some text: decoders only
	// treat the window's first token specially (Metaspace drops its "▁", Strip after Fuse trims
	// the start of the text), and a context with text of its own absorbs that the same way
	// alone as in the window.
	for m := 1; m <= len(d.ids); m++ {
		ctx := d.ids[len(d.ids)-m:]
		var p string
		if m == 1 {
			p = d.t.decodeAlone(id)
		} else {
			d.toks = d.t.appendTokens(d.toks[:0], ctx, d.skipSpecial)
			p = d.t.decodeTokens(d.toks)
		}
		if p != "" || m == len(d.ids) {
			d.ids = append(d.ids[:0], ctx...)
			d.prefix = p
			break
		}
	}
	d.settled = int(id) < len(d.t.pieces) && d.t.pieces[id] != ""
	return out
}

// Flush returns whatever is still held back (an incomplete character at the end of the stream,
// rendered as Decode renders it) and resets the decoder for a new stream.
func (d *StreamDecoder) Flush() string {
	out := ""
	if !d.lazy { // after the fast path nothing is held back
		if s := d.decodeWindow(); strings.HasPrefix(s, d.prefix) {
			out = s[len(d.prefix):]
		}
	}
	d.ids, d.prefix, d.lazy, d.settled = d.ids[:0], "", false, false
	return out
}

// resolve computes the context text the fast path left for later.
func (d *StreamDecoder) resolve() {
	if d.lazy {
		d.prefix, d.lazy = d.t.decodeAlone(d.ids[0]), false
	}
}

// decodeAlone is Decode([id]) for a visible id, cached: it is the usual stream context.
func (t *Tokenizer) decodeAlone(id int32) string {
	if s, ok := t.alone.Load(id); ok {
		return s.(string)
	}
	tok, _ := t.decodeText(id, false)
	s := t.decodeTokens([]string{tok})
	t.alone.Store(id, s)
	return s
}

func (d *StreamDecoder) decodeWindow() string {
	d.toks = d.t.appendTokens(d.toks[:0], d.ids, d.skipSpecial)
	return d.t.decodeTokens(d.toks)
}

// streamPieces returns, for every id, the text the id adds to a settled stream (see
// StreamDecoder), or "" when the id is not plain and needs the general path. A plain token's
// text does not depend on what came before: for every context C whose last token is plain,
// Decode(C+[id]) == Decode(C) + piece. That holds when every decoder step before the point
// where the tokens are joined (Fuse or ByteLevel) works on each token alone, only Metaspace
// treating the first one differently; the token is no <0xXX> byte that ByteFallback would join
// with its neighbours; ByteLevel turns it, first or not, into complete UTF-8 that cannot join
// bytes before or after it; and after the join nothing but one Strip of at most one leading
// character follows, which a non-empty context has already absorbed. A plain token must also
// decode to some text alone, so that it can serve as the general path's context. A decoder
// outside that shape gets no pieces: everything takes the general path.
func (t *Tokenizer) streamPieces() []string {
	if t.decoder == nil { // HF joins the tokens with spaces
		return t.buildPieces(func(dst []byte, tok string) ([]byte, bool) {
			return append(append(dst, ' '), tok...), tok != "" && utf8.ValidString(tok)
		})
	}
	steps := flattenDecoder(t.decoder, nil)
	join := len(steps)
	for i, st := range steps {
		if _, ok := st.(decFuse); ok {
			join = i
			break
		}
		if _, ok := st.(decByteLevel); ok {
			join = i
			break
		}
	}
	var strip *decStrip
	for _, st := range steps[min(join+1, len(steps)):] {
		switch st := st.(type) {
		case decFuse:
		case decStrip:
			// Two Strips of one character each can reach into the next token.
			if st.stop != 0 || st.start > 1 || (st.start == 1 && strip != nil) {
				return nil
			}
			if st.start == 1 {
				strip = &st
			}
		default:
			return nil
		}
	}
	perToken := steps[:join]
	byteLevel := false
	if join < len(steps) {
		_, byteLevel = steps[join].(decByteLevel)
	}
	var rest [2]string
	var first [1]string
	return t.buildPieces(func(dst []byte, tok string) ([]byte, bool) {
		// The empty token in front stands for the context, so tok is not the first token.
		r, f := append(rest[:0], "", tok), append(first[:0], tok)
		for _, st := range perToken {
			if _, ok := st.(decByteFallback); ok && (isByteToken(r[1]) || isByteToken(f[0])) {
				return dst, false
			}
			if r, f = st.decodeChain(r), st.decodeChain(f); len(r) != 2 || len(f) != 1 {
				return dst, false
			}
		}
		n := len(dst)
		p, a := r[1], f[0]
		if byteLevel {
			// ByteLevel takes a token's own bytes when it has a character outside its alphabet.
			var ok bool
			if dst, ok = byteLevelBytes(dst, a); !ok {
				dst = append(dst, a...)
			}
			if !firstOK(dst[n:], strip) {
				return dst[:n], false
			}
			if dst, ok = byteLevelBytes(dst[:n], p); !ok {
				dst = append(dst, p...)
			}
		} else {
			if !firstOK([]byte(a), strip) {
				return dst, false
			}
			dst = append(dst, p...)
		}
		return dst, len(dst) > n && utf8.Valid(dst[n:])
	})
}

// firstOK reports whether a token whose text as the first token of a stream is a (after the
// per-token steps and ByteLevel) can end a settled context: a is complete UTF-8, and Decode of
// the token alone, a with the Strip applied, is not empty.
func firstOK(a []byte, strip *decStrip) bool {
	if !utf8.Valid(a) {
		return false
	}
	if c, size := utf8.DecodeRune(a); strip != nil && c == strip.content {
		a = a[size:]
	}
	return len(a) > 0
}

// buildPieces applies piece, which appends a token's piece to dst or reports it has none, to
// the decoding text of every visible id. All pieces live in one string: one allocation instead
// of one per token.
func (t *Tokenizer) buildPieces(piece func(dst []byte, tok string) ([]byte, bool)) []string {
	var all []byte
	ends := make([]int, len(t.tokens)) // end offset in all, or -1
	for id := range t.tokens {
		ends[id] = -1
		tok, ok := t.decodeText(int32(id), false)
		if !ok {
			continue
		}
		n := len(all)
		if all, ok = piece(all, tok); ok {
			ends[id] = len(all)
		} else {
			all = all[:n]
		}
	}
	s := string(all)
	pieces := make([]string, len(t.tokens))
	start := 0
	for id, end := range ends {
		if end >= 0 {
			pieces[id], start = s[start:end], end
		}
	}
	return pieces
}

// flattenDecoder appends the steps of d, with nested Sequences expanded, to out.
func flattenDecoder(d decoder, out []decoder) []decoder {
	if seq, ok := d.(decSequence); ok {
		for _, x := range seq {
			out = flattenDecoder(x, out)
		}
		return out
	}
	return append(out, d)
}
