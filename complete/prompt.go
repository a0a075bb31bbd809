package complete

import (
	"strings"
	"unicode/utf8"
)

// fimFamilies are the fill-in-the-middle token triples we know, in prefix-suffix-middle order;
// a model uses the first family whose three tokens its tokenizer has.
var fimFamilies = [][3]string{
	{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}, // Qwen2.5-Coder
	{"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},       // StarCoder, SantaCoder, laya-code
	{"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},       // DeepSeek-Coder
}

// fimExits are tokens a FIM model produces when it has left the hole (file and repository
// markers, padding); generation ends at them like at EOS.
var fimExits = []string{
	"<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|endoftext|>",
	"<fim_pad>", "<file_sep>", "<filename>", "<reponame>", "<gh_stars>", "<|EOT|>",
}

// fimTokens are the ids of a model's FIM tokens.
type fimTokens struct {
	prefix, suffix, middle int32
	stop                   []int32 // the three markers and every fimExits token the model has
}

func findFIM(v vocab) *fimTokens {
	for _, fam := range fimFamilies {
		var ids [3]int32
		ok := true
		for i, s := range fam {
			ids[i], ok = v.TokenID(s)
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		f := &fimTokens{prefix: ids[0], suffix: ids[1], middle: ids[2], stop: ids[:]}
		for _, s := range fimExits {
			if id, ok := v.TokenID(s); ok {
				f.stop = append(f.stop, id)
			}
		}
		return f
	}
	return nil
}

// prompt is a request turned into model input.
type prompt struct {
	ids []int32
	// healed is the text of the prefix token backed off for token healing; firstTokens are the
	// tokens whose text starts with it. Both are empty when not healing.
	healed      string
	firstTokens []int32
	stopTokens  []int32
	fim         bool
	// suffixLine is the rest of the caret's line after it (trailing space removed), which a
	// suggestion must not repeat.
	suffixLine string
}

// buildPrompt makes the model input for req within budget positions.
func (c *Completer) buildPrompt(req Request, prof Profile, budget int) prompt {
	pre := trimPrefix(req.Prefix, c.opt.ContextChars)
	suf := trimSuffix(req.Suffix, c.opt.SuffixChars)
	var p prompt
	line, _, _ := strings.Cut(req.Suffix, "\n")
	p.suffixLine = strings.TrimRight(line, " \t\r")
	p.fim = c.fim != nil && strings.TrimSpace(suf) != ""

	var head []int32
	if c.addBOS {
		head = append(head, c.m.vocab.BOS())
	}
	preIDs := c.m.vocab.Encode(prof.Hint+pre, false)
	var sufIDs []int32
	fixed := len(head) + 1 // at least one position to generate from
	if p.fim {
		sufIDs = c.m.vocab.Encode(suf, false)
		if n := max(budget/4, 1); len(sufIDs) > n {
			sufIDs = sufIDs[:n]
		}
		fixed += 3 + len(sufIDs)
		p.stopTokens = c.fim.stop
	}
	preIDs = trimTokens(preIDs, budget-fixed)

	// Heal only when something other than the healed token is left to condition on and other
	// tokens could extend its text; otherwise the constraint would change nothing.
	if n := len(preIDs); n > 0 && (n > 1 || len(head) > 0 || p.fim) {
		if text, cands := c.heal.candidates(preIDs[n-1]); len(cands) > 1 {
			p.healed, p.firstTokens = text, cands
			preIDs = preIDs[:n-1]
		}
	}

	p.ids = make([]int32, 0, len(head)+len(preIDs)+len(sufIDs)+3)
	p.ids = append(p.ids, head...)
	if p.fim {
		p.ids = append(p.ids, c.fim.prefix)
		p.ids = append(p.ids, preIDs...)
		p.ids = append(p.ids, c.fim.suffix)
		p.ids = append(p.ids, sufIDs...)
		p.ids = append(p.ids, c.fim.middle)
	} else {
		p.ids = append(p.ids, preIDs...)
	}
	return p
}

// trimPrefix keeps at most about n bytes of the end of s. The cut moves in steps of n/8 and
// then to the next line start, so while the user types at the end the kept text keeps the same
// beginning, and its tokens, and the session's cache stays reusable.
func trimPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	step := max(n/8, 1)
	cut := (len(s) - n + step - 1) / step * step
	if i := strings.IndexByte(s[cut:min(len(s), cut+step)], '\n'); i >= 0 {
		cut += i + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}

// trimSuffix keeps at most n bytes of the start of s, ending at a line end when one is in the
// second half.
func trimSuffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	if i := strings.LastIndexByte(s[n/2:n], '\n'); i >= 0 {
		cut = n/2 + i + 1
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// trimTokens keeps at most n tokens of the end of ids, dropping from the start in steps of
// n/8 for the same cache-reuse reason as trimPrefix.
func trimTokens(ids []int32, n int) []int32 {
	n = max(n, 1)
	if len(ids) <= n {
		return ids
	}
	step := max(n/8, 1)
	drop := (len(ids) - n + step - 1) / step * step
	return ids[min(drop, len(ids)):]
}
