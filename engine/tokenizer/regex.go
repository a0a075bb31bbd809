package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// This file is a small backtracking regular-expression engine for the subset of Oniguruma syntax
// that tokenizer.json Split patterns use. Go's regexp has no lookahead, and the GPT-2 family of
// patterns ends in \s+(?!\S), so leftmost-first backtracking semantics (as in Oniguruma, which HF
// tokenizers uses) are implemented here. Anything outside the subset is a compile error rather
// than a silently different match.
//
// Supported: literals and escapes, ., character classes with ranges and \p{..}/\P{..}/\s/\d/\w
// inside, alternation, (...) and (?:...), (?i:...), (?i), lookahead (?=...) and (?!...),
// quantifiers ? * + {n} {n,} {n,m} (greedy and lazy) on single characters, and finite
// quantifiers on groups; anchors ^ $ (line anchors, as in Ruby syntax) and \A \z.
// Unbounded quantifiers on groups are rejected: they are never needed by tokenizer patterns and
// are the source of exponential backtracking.

// maxRegexNodes bounds the compiled program so that expanded counted groups stay small.
const maxRegexNodes = 10000

type nodeKind uint8

const (
	kMatch  nodeKind = iota // overall match: record the end
	kAccept                 // end of a lookahead body
	kChar                   // one character in set
	kRepeat                 // set repeated min..max times
	kAlt                    // try alts in order
	kLook                   // lookahead
	kLineBegin
	kLineEnd
	kTextBegin
	kTextEnd
)

type node struct {
	kind   nodeKind
	set    *charSet
	min    int
	max    int // -1 = unbounded
	greedy bool
	neg    bool
	alts   []*node
	firsts []*firstSet // per alt: what the first rune must be; nil = unknown
	sub    *node
	next   *node
}

// regex is a compiled pattern. It is immutable and safe for concurrent use.
type regex struct {
	prog *node
}

// classItem is one member of a character class: a rune range or a Unicode table (possibly
// negated, for \S or \P{..} inside a class).
type classItem struct {
	lo, hi rune
	tables []*unicode.RangeTable
	bits   []*bmpBits // tables[i]'s Basic Multilingual Plane as a bitmap
	neg    bool
}

// bmpBits is a Unicode table's membership for U+0000..U+FFFF as a bitmap, built on first use:
// binary-searching \p{L} for every non-ASCII character (SentencePiece's "▁" starts most words)
// dominated matching.
type bmpBits struct {
	once sync.Once
	t    *unicode.RangeTable
	bits [1 << 10]uint64
}

func (b *bmpBits) has(r rune) bool {
	b.once.Do(func() {
		for c := rune(0); c < 1<<16; c++ {
			if unicode.Is(b.t, c) {
				b.bits[c>>6] |= 1 << (uint(c) & 63)
			}
		}
	})
	return b.bits[r>>6]&(1<<(uint(r)&63)) != 0
}

var bmpCache sync.Map // *unicode.RangeTable -> *bmpBits

func tableItem(ts []*unicode.RangeTable, neg bool) classItem {
	it := classItem{tables: ts, neg: neg}
	for _, t := range ts {
		b, _ := bmpCache.LoadOrStore(t, &bmpBits{t: t})
		it.bits = append(it.bits, b.(*bmpBits))
	}
	return it
}

// charSet is a character class. ASCII membership is precomputed because nearly all text a
// tokenizer sees is ASCII.
type charSet struct {
	items []classItem
	neg   bool
	fold  bool
	ascii [2]uint64
}

func (c *charSet) rawHas(r rune) bool {
	for _, it := range c.items {
		var in bool
		if it.tables != nil {
			// Latin-1 is fast in package unicode already (and ASCII is precomputed), so the
			// bitmaps are only built once text outside it shows up.
			if r >= 0x100 && r < 1<<16 {
				for _, b := range it.bits {
					if in = b.has(r); in {
						break
					}
				}
			} else {
				in = unicode.IsOneOf(it.tables, r)
			}
		} else {
			in = it.lo <= r && r <= it.hi
		}
		if in != it.neg {
			return true
		}
	}
	return false
}

func (c *charSet) slowHas(r rune) bool {
	in := c.rawHas(r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.rawHas(f) {
				in = true
				break
			}
		}
	}
	return in != c.neg
}

func (c *charSet) finish() *charSet {
	for r := rune(0); r < 128; r++ {
		if c.slowHas(r) {
			c.ascii[r>>6] |= 1 << (uint(r) & 63)
		}
	}
	return c
}

func (c *charSet) has(r rune) bool {
	if r < 128 {
		return c.ascii[r>>6]&(1<<(uint(r)&63)) != 0
	}
	return c.slowHas(r)
}

var (
	// wordTables is Unicode \w: alphabetic, marks, decimal digits, connector punctuation, joiners.
	wordTables = []*unicode.RangeTable{unicode.L, unicode.M, unicode.Nd, unicode.Pc, unicode.Nl, unicode.Other_Alphabetic, unicode.Join_Control}
	anyButNL   = (&charSet{items: []classItem{{lo: '\n', hi: '\n'}}, neg: true}).finish()
)

// ast is the parse tree of a pattern.
type ast struct {
	op     astOp
	set    *charSet
	subs   []*ast
	min    int
	max    int
	greedy bool
	neg    bool
	anchor nodeKind
}

type astOp uint8

const (
	aEmpty astOp = iota
	aChar
	aConcat
	aAlt
	aRepeat
	aLook
	aAnchor
)

type reParser struct {
	src  string
	pos  int
	fold bool
}

func compileRegex(src string) (*regex, error) {
	p := &reParser{src: src}
	tree, err := p.parseAlt()
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", src, err)
	}
	if p.pos < len(src) {
		return nil, fmt.Errorf("regex %q: unexpected ) at offset %d", src, p.pos)
	}
	count := 0
	prog, err := build(tree, &node{kind: kMatch}, &count)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", src, err)
	}
	return &regex{prog: prog}, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}

func (p *reParser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

func (p *reParser) parseAlt() (*ast, error) {
	saved := p.fold
	defer func() { p.fold = saved }()
	var alts []*ast
	for {
		c, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.more() && p.peek() == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &ast{op: aAlt, subs: alts}, nil
}

func (p *reParser) parseConcat() (*ast, error) {
	var items []*ast
	for p.more() {
		c := p.peek()
		if c == '|' || c == ')' {
			break
		}
		atom, err := p.parseAtom()
		if err != nil {
			return nil, err
		}
		if atom == nil { // an inline flag group such as (?i)
			continue
		}
		atom, err = p.parseQuant(atom)
		if err != nil {
			return nil, err
		}
		items = append(items, atom)
	}
	switch len(items) {
	case 0:
		return &ast{op: aEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &ast{op: aConcat, subs: items}, nil
}

func (p *reParser) parseQuant(atom *ast) (*ast, error) {
	for p.more() {
		min, max := -2, -2
		start := p.pos
		switch p.peek() {
		case '?':
			min, max = 0, 1
			p.pos++
		case '*':
			min, max = 0, -1
			p.pos++
		case '+':
			min, max = 1, -1
			p.pos++
		case '{':
			var ok bool
			min, max, ok = p.parseBraces()
			if !ok {
				p.pos = start
				return atom, nil // Oniguruma treats an invalid {..} as literal text
			}
		default:
			return atom, nil
		}
		if atom.op == aLook || atom.op == aAnchor || atom.op == aEmpty {
			return nil, errors.New("quantifier on an assertion")
		}
		if atom.op == aRepeat {
			return nil, errors.New("nested quantifiers are not supported")
		}
		greedy := true
		if p.more() {
			switch p.peek() {
			case '?':
				greedy = false
				p.pos++
			case '+':
				return nil, errors.New("possessive quantifiers are not supported")
			}
		}
		if max >= 0 && min > max {
			return nil, errors.New("bad repetition bounds")
		}
		atom = &ast{op: aRepeat, subs: []*ast{atom}, min: min, max: max, greedy: greedy}
	}
	return atom, nil
}

func (p *reParser) parseBraces() (min, max int, ok bool) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, false
	}
	body := p.src[p.pos+1 : p.pos+end]
	lo, hi, comma := strings.Cut(body, ",")
	var err error
	if min, err = strconv.Atoi(lo); err != nil || min > 1000 {
		return 0, 0, false
	}
	switch {
	case !comma:
		max = min
	case hi == "":
		max = -1
	default:
		if max, err = strconv.Atoi(hi); err != nil || max > 1000 {
			return 0, 0, false
		}
	}
	p.pos += end + 1
	return min, max, true
}

func (p *reParser) parseAtom() (*ast, error) {
	c := p.next()
	switch c {
	case '(':
		return p.parseGroup()
	case '[':
		set, err := p.parseClass()
		if err != nil {
			return nil, err
		}
		return &ast{op: aChar, set: set}, nil
	case '.':
		return &ast{op: aChar, set: anyButNL}, nil
	case '^':
		return &ast{op: aAnchor, anchor: kLineBegin}, nil
	case '$':
		return &ast{op: aAnchor, anchor: kLineEnd}, nil
	case '\\':
		if !p.more() {
			return nil, errors.New("trailing backslash")
		}
		switch p.peek() {
		case 'A':
			p.pos++
			return &ast{op: aAnchor, anchor: kTextBegin}, nil
		case 'z':
			p.pos++
			return &ast{op: aAnchor, anchor: kTextEnd}, nil
		}
		item, err := p.parseEscape(false)
		if err != nil {
			return nil, err
		}
		return &ast{op: aChar, set: p.set([]classItem{item}, false)}, nil
	case '*', '+', '?', '{':
		if c == '{' {
			return p.literal(c), nil
		}
		return nil, fmt.Errorf("missing argument to %c", c)
	}
	return p.literal(c), nil
}

func (p *reParser) literal(c rune) *ast {
	return &ast{op: aChar, set: p.set([]classItem{{lo: c, hi: c}}, false)}
}

func (p *reParser) set(items []classItem, neg bool) *charSet {
	return (&charSet{items: items, neg: neg, fold: p.fold}).finish()
}

func (p *reParser) parseGroup() (*ast, error) {
	if !strings.HasPrefix(p.src[p.pos:], "?") {
		return p.groupBody()
	}
	p.pos++
	if !p.more() {
		return nil, errors.New("unterminated group")
	}
	switch c := p.next(); c {
	case ':':
		return p.groupBody()
	case '=', '!':
		body, err := p.groupBody()
		if err != nil {
			return nil, err
		}
		return &ast{op: aLook, subs: []*ast{body}, neg: c == '!'}, nil
	case 'i', '-':
		on := c == 'i'
		if c == '-' {
			if !p.more() || p.next() != 'i' {
				return nil, errors.New("unsupported group flags")
			}
		}
		if !p.more() {
			return nil, errors.New("unterminated group")
		}
		switch p.next() {
		case ')': // applies to the rest of the enclosing group
			p.fold = on
			return nil, nil
		case ':':
			saved := p.fold
			p.fold = on
			body, err := p.groupBody()
			p.fold = saved
			return body, err
		}
		return nil, errors.New("unsupported group flags")
	default:
		return nil, fmt.Errorf("unsupported group (?%c", c)
	}
}

func (p *reParser) groupBody() (*ast, error) {
	body, err := p.parseAlt()
	if err != nil {
		return nil, err
	}
	if !p.more() || p.peek() != ')' {
		return nil, errors.New("missing )")
	}
	p.pos++
	return body, nil
}

func (p *reParser) parseClass() (*charSet, error) {
	neg := false
	if p.more() && p.peek() == '^' {
		neg = true
		p.pos++
	}
	var items []classItem
	first := true
	for {
		if !p.more() {
			return nil, errors.New("missing ]")
		}
		c := p.next()
		if c == ']' && !first {
			break
		}
		first = false
		var it classItem
		switch c {
		case '[':
			return nil, errors.New("nested character classes are not supported")
		case '\\':
			if !p.more() {
				return nil, errors.New("trailing backslash")
			}
			var err error
			if it, err = p.parseEscape(true); err != nil {
				return nil, err
			}
		default:
			if c == '&' && p.more() && p.peek() == '&' {
				return nil, errors.New("class intersection is not supported")
			}
			it = classItem{lo: c, hi: c}
		}
		// A range a-z, unless '-' ends the class.
		if it.tables == nil && it.lo == it.hi && strings.HasPrefix(p.src[p.pos:], "-") && !strings.HasPrefix(p.src[p.pos:], "-]") && p.pos+1 < len(p.src) {
			p.pos++
			hc := p.next()
			hi := classItem{lo: hc, hi: hc}
			if hc == '\\' {
				if !p.more() {
					return nil, errors.New("trailing backslash")
				}
				var err error
				if hi, err = p.parseEscape(true); err != nil {
					return nil, err
				}
			}
			if hi.tables != nil || hi.lo != hi.hi || hi.lo < it.lo {
				return nil, errors.New("bad character range")
			}
			it.hi = hi.lo
		}
		items = append(items, it)
	}
	return p.set(items, neg), nil
}

// parseEscape parses what follows a backslash, as one class item.
func (p *reParser) parseEscape(inClass bool) (classItem, error) {
	c := p.next()
	lit := func(r rune) (classItem, error) { return classItem{lo: r, hi: r}, nil }
	tab := func(t *unicode.RangeTable, neg bool) (classItem, error) {
		return tableItem([]*unicode.RangeTable{t}, neg), nil
	}
	switch c {
	case 'n':
		return lit('\n')
	case 'r':
		return lit('\r')
	case 't':
		return lit('\t')
	case 'f':
		return lit('\f')
	case 'v':
		return lit('\v')
	case 'a':
		return lit('\a')
	case 'e':
		return lit(0x1b)
	case 's', 'S':
		return tab(unicode.White_Space, c == 'S')
	case 'd', 'D':
		return tab(unicode.Nd, c == 'D')
	case 'w', 'W':
		return tableItem(wordTables, c == 'W'), nil
	case 'p', 'P':
		t, err := p.parseProperty()
		if err != nil {
			return classItem{}, err
		}
		return tableItem([]*unicode.RangeTable{t}, c == 'P'), nil
	case 'x':
		return p.parseHex()
	case 'u':
		if p.pos+4 > len(p.src) {
			return classItem{}, errors.New("bad \\u escape")
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
		if err != nil {
			return classItem{}, errors.New("bad \\u escape")
		}
		p.pos += 4
		return lit(rune(v))
	}
	if c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
		return classItem{}, fmt.Errorf("unsupported escape \\%c", c)
	}
	return lit(c)
}

func (p *reParser) parseHex() (classItem, error) {
	var digits string
	if strings.HasPrefix(p.src[p.pos:], "{") {
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return classItem{}, errors.New("bad \\x escape")
		}
		digits = p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
	} else {
		if p.pos+2 > len(p.src) {
			return classItem{}, errors.New("bad \\x escape")
		}
		digits = p.src[p.pos : p.pos+2]
		p.pos += 2
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return classItem{}, errors.New("bad \\x escape")
	}
	return classItem{lo: rune(v), hi: rune(v)}, nil
}

var propertyAliases = map[string]string{
	"Letter": "L", "Mark": "M", "Number": "N", "Punctuation": "P", "Symbol": "S",
	"Separator": "Z", "Other": "C", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
	"Decimal_Number": "Nd",
}

func (p *reParser) parseProperty() (*unicode.RangeTable, error) {
	var name string
	if strings.HasPrefix(p.src[p.pos:], "{") {
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, errors.New("bad \\p{...}")
		}
		name = p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
	} else {
		if !p.more() {
			return nil, errors.New("bad \\p")
		}
		name = string(p.next())
	}
	if a, ok := propertyAliases[name]; ok {
		name = a
	}
	if t, ok := unicode.Categories[name]; ok {
		return t, nil
	}
	if t, ok := unicode.Scripts[name]; ok {
		return t, nil
	}
	if t, ok := unicode.Properties[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("unknown Unicode property %q", name)
}

// build turns a parse tree into a node graph whose tail continues at next.
func build(a *ast, next *node, count *int) (*node, error) {
	*count++
	if *count > maxRegexNodes {
		return nil, errors.New("pattern too large")
	}
	switch a.op {
	case aEmpty:
		return next, nil
	case aChar:
		return &node{kind: kChar, set: a.set, next: next}, nil
	case aAnchor:
		return &node{kind: a.anchor, next: next}, nil
	case aConcat:
		n := next
		for i := len(a.subs) - 1; i >= 0; i-- {
			var err error
			if n, err = build(a.subs[i], n, count); err != nil {
				return nil, err
			}
		}
		return n, nil
	case aAlt:
		n := &node{kind: kAlt, next: next}
		for _, s := range a.subs {
			b, err := build(s, next, count)
			if err != nil {
				return nil, err
			}
			n.alts = append(n.alts, b)
		}
		n.firsts = make([]*firstSet, len(n.alts))
		for i, b := range n.alts {
			n.firsts[i] = newFirstSet(firstSets(b, 0))
		}
		return n, nil
	case aLook:
		body, err := build(a.subs[0], &node{kind: kAccept}, count)
		if err != nil {
			return nil, err
		}
		return &node{kind: kLook, sub: body, neg: a.neg, next: next}, nil
	case aRepeat:
		sub := a.subs[0]
		if sub.op == aChar {
			return &node{kind: kRepeat, set: sub.set, min: a.min, max: a.max, greedy: a.greedy, next: next}, nil
		}
		if a.max < 0 {
			return nil, errors.New("unbounded quantifier on a group is not supported")
		}
		// sub{min,max} = sub x min, then (max-min) nested optionals.
		n := next
		for i := a.max - a.min; i > 0; i-- {
			body, err := build(sub, n, count)
			if err != nil {
				return nil, err
			}
			alt := &node{kind: kAlt, next: next, alts: []*node{body, next}}
			if !a.greedy {
				alt.alts = []*node{next, body}
			}
			alt.firsts = []*firstSet{newFirstSet(firstSets(alt.alts[0], 0)), newFirstSet(firstSets(alt.alts[1], 0))}
			n = alt
		}
		for i := 0; i < a.min; i++ {
			var err error
			if n, err = build(sub, n, count); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return nil, errors.New("internal: unknown node")
}

// firstSets returns sets one of which must contain the first rune of any match starting at n,
// or nil when that is unknown (n can match empty, or starts with an assertion).
func firstSets(n *node, depth int) []*charSet {
	if depth > 8 {
		return nil
	}
	switch n.kind {
	case kChar:
		return []*charSet{n.set}
	case kRepeat:
		if n.min > 0 {
			return []*charSet{n.set}
		}
		rest := firstSets(n.next, depth+1)
		if rest == nil {
			return nil
		}
		return append([]*charSet{n.set}, rest...)
	case kAlt:
		var all []*charSet
		for _, b := range n.alts {
			f := firstSets(b, depth+1)
			if f == nil {
				return nil
			}
			all = append(all, f...)
		}
		return all
	}
	return nil
}

// firstSet is the union of the sets a match's first rune may be in, with the ASCII part merged
// into one bitmap: alternation tries only the branches that can start at the current rune.
type firstSet struct {
	ascii [2]uint64
	sets  []*charSet
}

func newFirstSet(sets []*charSet) *firstSet {
	if sets == nil {
		return nil
	}
	f := &firstSet{sets: sets}
	for _, s := range sets {
		f.ascii[0] |= s.ascii[0]
		f.ascii[1] |= s.ascii[1]
	}
	return f
}

func (f *firstSet) has(r rune) bool {
	if r < 0 {
		return false
	}
	if r < 128 {
		return f.ascii[r>>6]&(1<<(uint(r)&63)) != 0
	}
	for _, s := range f.sets {
		if s.slowHas(r) {
			return true
		}
	}
	return false
}

// matchBudget bounds the steps one match attempt may take, like Oniguruma's retry limit, so a
// pathological pattern (e.g. (a|a){0,40}) cannot hang encoding; an attempt over budget fails.
const matchBudget = 1 << 20

type matcher struct {
	s     string
	end   int
	steps int
}

func (m *matcher) run(n *node, pos int) bool {
	s := m.s
	for {
		if m.steps++; m.steps > matchBudget {
			return false
		}
		switch n.kind {
		case kMatch:
			m.end = pos
			return true
		case kAccept:
			return true
		case kChar:
			if pos >= len(s) {
				return false
			}
			r, sz := rune(s[pos]), 1
			if r >= utf8.RuneSelf {
				r, sz = utf8.DecodeRuneInString(s[pos:])
			}
			if !n.set.has(r) {
				return false
			}
			pos += sz
			n = n.next
		case kRepeat:
			return m.repeat(n, pos)
		case kAlt:
			r := rune(-1)
			if pos < len(s) {
				r, _ = utf8.DecodeRuneInString(s[pos:])
			}
			last := len(n.alts) - 1
			for i := 0; i < last; i++ {
				if f := n.firsts[i]; f != nil && !f.has(r) {
					continue
				}
				if m.run(n.alts[i], pos) {
					return true
				}
			}
			if f := n.firsts[last]; f != nil && !f.has(r) {
				return false
			}
			n = n.alts[last]
		case kLook:
			sub := matcher{s: s, steps: m.steps}
			ok := sub.run(n.sub, pos)
			m.steps = sub.steps
			if ok == n.neg {
				return false
			}
			n = n.next
		case kLineBegin:
			if pos != 0 && s[pos-1] != '\n' {
				return false
			}
			n = n.next
		case kLineEnd:
			if pos != len(s) && s[pos] != '\n' {
				return false
			}
			n = n.next
		case kTextBegin:
			if pos != 0 {
				return false
			}
			n = n.next
		case kTextEnd:
			if pos != len(s) {
				return false
			}
			n = n.next
		default:
			return false
		}
	}
}

func (m *matcher) repeat(n *node, pos int) bool {
	s := m.s
	start := pos
	count := 0
	// step consumes one more character of the set, if the set and the bound allow it.
	step := func() bool {
		if pos >= len(s) || (n.max >= 0 && count >= n.max) {
			return false
		}
		r, sz := rune(s[pos]), 1
		if r >= utf8.RuneSelf {
			r, sz = utf8.DecodeRuneInString(s[pos:])
		}
		if !n.set.has(r) {
			return false
		}
		pos += sz
		count++
		return true
	}
	if !n.greedy {
		for count < n.min {
			if !step() {
				return false
			}
		}
		for {
			if m.run(n.next, pos) {
				return true
			}
			if !step() {
				return false
			}
		}
	}
	// Greedy: the inlined equivalent of "for step() {}", the hot loop of every tokenizer regex.
	for pos < len(s) && (n.max < 0 || count < n.max) {
		c := s[pos]
		if c < utf8.RuneSelf {
			if n.set.ascii[c>>6]&(1<<(c&63)) == 0 {
				break
			}
			pos++
		} else {
			r, sz := utf8.DecodeRuneInString(s[pos:])
			if !n.set.slowHas(r) {
				break
			}
			pos += sz
		}
		count++
	}
	if count < n.min {
		return false
	}
	for {
		if n.next.kind == kMatch {
			m.end = pos
			return true
		}
		if m.run(n.next, pos) {
			return true
		}
		if count == n.min || m.steps > matchBudget {
			return false
		}
		_, sz := utf8.DecodeLastRuneInString(s[start:pos])
		pos -= sz
		count--
	}
}

// findAll calls fn for each successive non-overlapping leftmost-first match in s, the way
// Oniguruma's iterator does: after an empty match the search resumes one character later.
func (re *regex) findAll(s string, fn func(start, end int)) {
	m := matcher{s: s}
	pos := 0
	for pos <= len(s) {
		found := false
		st := pos
		for ; st <= len(s); st++ {
			if st < len(s) && !utf8.RuneStart(s[st]) {
				continue
			}
			m.steps = 0
			if m.run(re.prog, st) {
				found = true
				break
			}
		}
		if !found {
			return
		}
		fn(st, m.end)
		if m.end == st {
			if st >= len(s) {
				return
			}
			_, sz := utf8.DecodeRuneInString(s[st:])
			pos = st + sz
		} else {
			pos = m.end
		}
	}
}
