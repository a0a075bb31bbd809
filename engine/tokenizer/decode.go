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
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	byteRuns    bool    // the decoder has ByteFallback
	ids         []int32 // window: context tokens already emitted, then pending tokens
	prefix      string  // decoded text of the context tokens alone
	toks        []string
}

// NewDecoder returns a streaming decoder.
func (t *Tokenizer) NewDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial, byteRuns: hasByteFallback(t.decoder)}
}

// Next adds one id and returns the newly completed text, possibly "".
func (d *StreamDecoder) Next(id int32) string {
	if _, ok := d.t.decodeText(id, d.skipSpecial); !ok {
		return "" // skipped ids must not become context: Decode never sees them
	}
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
	return out
}

// Flush returns whatever is still held back (an incomplete character at the end of the stream,
// rendered as Decode renders it) and resets the decoder for a new stream.
func (d *StreamDecoder) Flush() string {
	s := d.decodeWindow()
	out := ""
	if strings.HasPrefix(s, d.prefix) {
		out = s[len(d.prefix):]
	}
	d.ids, d.prefix = d.ids[:0], ""
	return out
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
