package tokenizer

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func splitAll(re *regex, s string) []string {
	var out []string
	re.findAll(s, func(a, b int) { out = append(out, s[a:b]) })
	return out
}

// TestRegexLookahead checks the GPT-2 family's \s+(?!\S): a run of spaces before a word gives
// its last space to the word. Expected splits worked out by hand from the pattern.
func TestRegexLookahead(t *testing.T) {
	cases := []struct {
		pat, in string
		want    []string
	}{
		{gpt2Pattern, "a   b", []string{"a", "  ", " b"}},
		{gpt2Pattern, "a   ", []string{"a", "   "}},
		{gpt2Pattern, "I'm   done!!\n", []string{"I", "'m", "  ", " done", "!!", "\n"}},
		{gpt2Pattern, "x 12 y", []string{"x", " 12", " y"}},
		{qwen2Pattern, "Hello  world\n\n  x", []string{"Hello", " ", " world", "\n\n", " ", " x"}},
		{qwen2Pattern, "IT'S 123", []string{"IT", "'S", " ", "1", "2", "3"}},
		{llama3Pattern, "x=12345;\r\n", []string{"x", "=", "123", "45", ";\r\n"}},
		{llama3Pattern, "\tfoo(bar)", []string{"\tfoo", "(bar", ")"}},
		{`a(?=b)|c`, "abacab", []string{"a", "c", "a"}},
		{`\d+?x|\d`, "12x3", []string{"12x", "3"}},
		{`(?i)ab|c`, "ABcAb", []string{"AB", "c", "Ab"}},
		{`^a|b$`, "ab\nab", []string{"a", "b", "a", "b"}},
		{`[^\s\p{L}]+`, "a-+ b", []string{"-+"}},
	}
	for _, c := range cases {
		re, err := compileRegex(c.pat)
		if err != nil {
			t.Fatalf("%q: %v", c.pat, err)
		}
		if got := splitAll(re, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q on %q: got %q, want %q", c.pat, c.in, got, c.want)
		}
	}
}

// TestRegexMatchesGoRegexp compares with Go's regexp (also leftmost-first) on patterns without
// lookahead, over random text whose white space is ASCII (where Go's \s agrees with Unicode's).
func TestRegexMatchesGoRegexp(t *testing.T) {
	pats := []string{
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+`,
		`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+`,
		`[\p{Lu}\p{Lt}]*[\p{Ll}\p{M}]+|\p{N}{2}|.`,
		`(?:ab|a)(?:bc|b)?|[a-c]{2,}?`,
		`\p{Han}+|[^\x00-\x7f]`,
	}
	alphabet := []rune("abcABC xyz'sStTdm123٣\t\n\r.,;!?-_日本éÉ\u0301😀ǅ")
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range pats {
		mine, err := compileRegex(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		std := regexp.MustCompile(p)
		for i := 0; i < 400; i++ {
			var b strings.Builder
			for n := rng.IntN(30); n > 0; n-- {
				b.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			s := b.String()
			var want []string
			for _, ix := range std.FindAllStringIndex(s, -1) {
				want = append(want, s[ix[0]:ix[1]])
			}
			if got := splitAll(mine, s); !slices.Equal(got, want) {
				t.Fatalf("%q on %q:\n got %q\nwant %q", p, s, got, want)
			}
		}
	}
}

func TestRegexUnsupported(t *testing.T) {
	for _, p := range []string{
		`(a+)+`, `(?:ab)*`, `a**`, `(?<=a)b`, `\bword`, `[[:alpha:]]`, `(a`, `a)`, `[a`, `\p{Nope}`,
		`a++`, `(?x)a`, `[a&&b]`, `\1`, `*a`,
	} {
		if _, err := compileRegex(p); err == nil {
			t.Errorf("%q compiled; want an error", p)
		}
	}
}

// TestRegexBudget: a pathological pattern must finish (over-budget attempts just fail).
func TestRegexBudget(t *testing.T) {
	re, err := compileRegex(`(?:a|a){0,60}b`)
	if err != nil {
		t.Fatal(err)
	}
	if got := splitAll(re, strings.Repeat("a", 25)); len(got) != 0 {
		t.Errorf("got %q, want no match", got)
	}
}
