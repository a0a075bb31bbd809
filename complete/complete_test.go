package complete

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var starcoderFIM = []string{"<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>"}

func say(text string, lps ...float32) script {
	return func([]int32) (string, []float32) { return text, lps }
}

func newFake(v *fakeVocab, s script, opt Options) (*Completer, *fakeModel) {
	m := &fakeModel{v: v, say: s, bytes: 1000}
	return newCompleter(m.lm(512), opt), m
}

func TestFIMPromptPerFamily(t *testing.T) {
	const prefix, suffix = "def f(x):\n", "    return x\n\nprint(f(2))\n"
	families := []struct {
		name     string
		specials []string
		format   string // the family's documented PSM layout
		bos      bool
	}{
		{"qwen2.5-coder", []string{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>"},
			"<|fim_prefix|>" + prefix + "<|fim_suffix|>" + suffix + "<|fim_middle|>", false},
		{"starcoder", starcoderFIM,
			"<fim_prefix>" + prefix + "<fim_suffix>" + suffix + "<fim_middle>", false},
		{"deepseek-coder", []string{"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},
			"<s><｜fim▁begin｜>" + prefix + "<｜fim▁hole｜>" + suffix + "<｜fim▁end｜>", true},
		{"none", nil, prefix, false},
		{"none-bos", nil, "<s>" + prefix, true},
	}
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			v := newFakeVocab([]string{"def", "return", "print"}, fam.specials, fam.bos)
			c, m := newFake(v, say("pass"), Options{})
			if _, err := c.Complete(context.Background(), "t", Request{Prefix: prefix, Suffix: suffix}, nil); err != nil {
				t.Fatal(err)
			}
			got := m.sessions[0].prompts[0]
			// "<s>" is only a special token to the fake when it exists, so encode it by hand.
			format, head := fam.format, []int32(nil)
			if fam.bos {
				format, head = strings.TrimPrefix(format, "<s>"), []int32{v.bos}
			}
			want := append(head, v.Encode(format, false)...)
			if !slices.Equal(got, want) {
				t.Errorf("prompt\n got %q\nwant %q", v.Decode(got, false), v.Decode(want, false))
			}
			if fam.specials != nil {
				// The FIM markers and exit tokens end generation.
				stops := m.sessions[0].samp[0].StopTokens
				for _, s := range fam.specials {
					if id, _ := v.TokenID(s); !slices.Contains(stops, id) {
						t.Errorf("%s is not a stop token (%v)", s, stops)
					}
				}
			}
			// Without text after the caret there is nothing to fill in: a plain prompt.
			if _, err := c.Complete(context.Background(), "t", Request{Prefix: prefix, Suffix: " \n"}, nil); err != nil {
				t.Fatal(err)
			}
			want = append(head, v.Encode(prefix, false)...)
			if got := m.sessions[0].prompts[1]; !slices.Equal(got, want) {
				t.Errorf("plain prompt\n got %q\nwant %q", v.Decode(got, false), v.Decode(want, false))
			}
		})
	}
}

func TestTokenHealing(t *testing.T) {
	words := []string{"pri", "prin", "print", "printf", "x =", "(x)", "prior"}
	v := newFakeVocab(words, nil, false)
	var got []string
	c, m := newFake(v, say("print(x)"), Options{})
	sug, err := c.Complete(context.Background(), "t", Request{Prefix: "x = pri"}, func(s string) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	if sug.Text != "nt(x)" || strings.Join(got, "") != sug.Text {
		t.Errorf("suggestion %q (streamed %q), want %q", sug.Text, got, "nt(x)")
	}
	s := m.sessions[0]
	if want := v.Encode("x = ", false); !slices.Equal(s.prompts[0], want) {
		t.Errorf("prompt %q, want the last token backed off: %q", v.Decode(s.prompts[0], false), v.Decode(want, false))
	}
	// Every token starting with "pri", found by brute force.
	var want []int32
	for id, tok := range v.toks {
		if strings.HasPrefix(tok, "pri") && !v.special[int32(id)] {
			want = append(want, int32(id))
		}
	}
	first := slices.Sorted(slices.Values(s.samp[0].FirstTokens))
	if !slices.Equal(first, want) {
		t.Errorf("first tokens %v, want %v", first, want)
	}

	// A last token nothing else extends is kept as it is, unconstrained.
	sug, err = c.Complete(context.Background(), "t", Request{Prefix: "y = (x)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.samp[1].FirstTokens); n != 0 || !slices.Equal(s.prompts[1], v.Encode("y = (x)", false)) {
		t.Errorf("healed an unextendable token: %d first tokens, prompt %q", n, v.Decode(s.prompts[1], false))
	}
}

func TestTrimPrefixStable(t *testing.T) {
	const n = 200
	var b strings.Builder
	lastCut := 0
	changes := 0
	for i := range 3000 {
		if i%37 == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte('a' + byte(i%26))
		}
		s := b.String()
		kept := trimPrefix(s, n)
		if len(kept) > n || !strings.HasSuffix(s, kept) {
			t.Fatalf("len %d: kept %d bytes, not an end of at most %d", len(s), len(kept), n)
		}
		cut := len(s) - len(kept)
		if cut < lastCut {
			t.Fatalf("cut moved back from %d to %d", lastCut, cut)
		}
		if cut > 0 && s[cut-1] != '\n' && strings.Contains(s[cut:min(len(s), cut+n/8)], "\n") {
			t.Fatalf("cut at %d is not at a line start although one was near", cut)
		}
		if cut != lastCut {
			changes++
		}
		lastCut = cut
	}
	// One move per n/8 bytes typed at most, not one per keystroke.
	if max := 3000/(n/8) + 1; changes > max {
		t.Errorf("cut moved %d times, want at most %d", changes, max)
	}
	if got := trimSuffix("ab\ncd\nef", 7); got != "ab\ncd\n" {
		t.Errorf("trimSuffix = %q", got)
	}
	if got := trimSuffix("héllo", 2); got != "h" {
		t.Errorf("trimSuffix cut inside a rune: %q", got)
	}
	if got := trimPrefix("aaaaaaaaé", 1); got != "" && !strings.HasPrefix(got, "é") {
		t.Errorf("trimPrefix cut inside a rune: %q", got)
	}
}

func TestTrimToContext(t *testing.T) {
	v := newFakeVocab(nil, nil, true)
	m := &fakeModel{v: v, say: say("z"), bytes: 1}
	c := newCompleter(m.lm(64), Options{MaxTokens: 8})
	prefix := strings.Repeat("0123456789", 30) + "end"
	if _, err := c.Complete(context.Background(), "t", Request{Prefix: prefix}, nil); err != nil {
		t.Fatal(err)
	}
	got := m.sessions[0].prompts[0]
	if len(got)+8 > 64 {
		t.Errorf("prompt of %d tokens + 8 to generate exceeds the context of 64", len(got))
	}
	all := v.Encode(prefix, false)
	if got[0] != v.bos || !slices.Equal(got[1:], all[len(all)-len(got)+1:]) {
		t.Errorf("prompt %q is not BOS + the end of the prefix", v.Decode(got, false))
	}
}

func TestStopRules(t *testing.T) {
	v := newFakeVocab([]string{"Hello", " there", "return"}, starcoderFIM, false)
	inf := math.Inf(-1)
	cases := []struct {
		name    string
		out     string
		lps     []float32
		req     Request
		prof    Profile
		opt     Options
		want    string
		stop    string
		partial bool // streamed text may differ (a rejected suggestion)
	}{
		{name: "line", out: "foo bar  \nbaz", want: "foo bar", stop: "line"},
		{name: "leading newline", out: "\n    return x\n    y", want: "\n    return x", stop: "line"},
		{name: "two lines", out: "a\nb\nc", prof: Profile{Lines: 2}, want: "a\nb", stop: "line"},
		{name: "sentence", out: "Hello there. How are", prof: Profile{Sentence: true}, want: "Hello there.", stop: "sentence"},
		{name: "decimal point", out: "pi is 3.14 or so! Yes", prof: Profile{Sentence: true}, want: "pi is 3.14 or so!", stop: "sentence"},
		{name: "stop string", out: "abcENDdef", req: Request{Stop: []string{"END"}}, want: "abc", stop: "stop"},
		{name: "suffix", out: "a, b)\n", req: Request{Suffix: ")\n"}, want: "a, b", stop: "suffix"},
		{name: "suffix spaced", out: "x + 1)", req: Request{Suffix: " + 1)"}, want: "x", stop: "suffix"},
		{name: "suffix overlap", out: "x = ba", req: Request{Suffix: "bar)"}, want: "x = ", stop: "eos"},
		{name: "only the suffix", out: ")", req: Request{Suffix: ")"}, want: "", stop: "suffix"},
		{name: "max tokens", out: "abcdef", req: Request{MaxTokens: 3}, want: "abc", stop: "max_tokens"},
		{name: "eos", out: "abc", want: "abc", stop: "eos"},
		{name: "fim exit token", out: "abc<file_sep>def", req: Request{Suffix: "\nmore"}, want: "abc", stop: "eos"},
		{name: "unsure first", out: "abc", lps: []float32{-5}, want: "", stop: "unsure"},
		{name: "unsure later", out: "abcd", lps: []float32{-0.1, -0.1, -9}, want: "ab", stop: "unsure"},
		{name: "unsure mean", out: "abcd", lps: []float32{-2.5, -2.5, -2.5, -2.5, -2.5}, want: "", stop: "unsure", partial: true},
		{name: "thresholds off", out: "abcd", lps: []float32{-20, -20, -20, -20, -20}, want: "abcd", stop: "eos",
			opt: Options{MinFirstLogprob: inf, MinPathLogprob: inf, MinTokenLogprob: inf, MinMeanLogprob: inf}},
		{name: "whitespace only", out: "   \n", want: "", stop: "eos"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			if opt.MinPathLogprob == 0 {
				// The fake's tokens are single characters: the path rule (TestPathLogprob)
				// would end these long outputs first.
				opt.MinPathLogprob = inf
			}
			if opt.MinChars == 0 {
				opt.MinChars = 1 // most outputs are short: the length rule (TestMinChars) would drop them
			}
			opt.Profiles = map[string]Profile{"": tc.prof}
			c, _ := newFake(v, say(tc.out, tc.lps...), opt)
			req := tc.req
			req.Prefix = ">" // no token extends it: no healing
			var streamed strings.Builder
			sug, err := c.Complete(context.Background(), "t", req, func(s string) { streamed.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			if sug.Text != tc.want || sug.Stop != tc.stop {
				t.Errorf("got %q (%s), want %q (%s)", sug.Text, sug.Stop, tc.want, tc.stop)
			}
			if !tc.partial && streamed.String() != sug.Text {
				t.Errorf("streamed %q, final %q", streamed.String(), sug.Text)
			}
			if !strings.HasPrefix(tc.out, streamed.String()) {
				t.Errorf("streamed %q is not a prefix of the output %q", streamed.String(), tc.out)
			}
		})
	}
}

func TestSessionsReuseAndLRU(t *testing.T) {
	v := newFakeVocab(nil, nil, false)
	m := &fakeModel{v: v, say: say("!"), bytes: 1000}
	c := newCompleter(m.lm(512), Options{CacheBudget: 2500})
	ctx := context.Background()
	ask := func(client, prefix string) Suggestion {
		t.Helper()
		s, err := c.Complete(ctx, client, Request{Prefix: prefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ask("a", "hello world")
	if s := ask("a", "hello world again"); s.Reused != len("hello world") {
		t.Errorf("second request reused %d tokens, want %d", s.Reused, len("hello world"))
	}
	ask("b", "bbb")
	ask("a", "hello world again and again") // a is now the most recently used
	ask("c", "ccc")                         // over budget: b, the least recently used, goes
	if n, bytes := c.Sessions(); n != 2 || bytes > 2500 {
		t.Errorf("%d sessions holding %d bytes, want 2 within 2500", n, bytes)
	}
	if !m.sessions[1].closed || m.sessions[0].closed || m.sessions[2].closed {
		t.Errorf("closed a=%v b=%v c=%v, want only b", m.sessions[0].closed, m.sessions[1].closed, m.sessions[2].closed)
	}
	if s := ask("a", "hello world again and again!"); s.Reused == 0 {
		t.Error("a lost its cache")
	}
	c.Close()
	for i, s := range m.sessions {
		if !s.closed {
			t.Errorf("session %d open after Close", i)
		}
	}
}

func TestNewerRequestCancelsOlder(t *testing.T) {
	v := newFakeVocab(nil, nil, false)
	m := &fakeModel{v: v, say: say(strings.Repeat("x", 200)), bytes: 1, delay: 5 * time.Millisecond}
	c := newCompleter(m.lm(512), Options{MaxTokens: 200, MinChars: 1})
	started := make(chan struct{})
	var once sync.Once
	var afterCancel int
	var canceled bool
	var mu sync.Mutex
	errc := make(chan error, 1)
	go func() {
		_, err := c.Complete(context.Background(), "same", Request{Prefix: "a"}, func(string) {
			once.Do(func() { close(started) })
			mu.Lock()
			if canceled {
				afterCancel++
			}
			mu.Unlock()
		})
		errc <- err
	}()
	<-started
	mu.Lock()
	canceled = true
	mu.Unlock()
	m.say = say("y")
	sug, err := c.Complete(context.Background(), "same", Request{Prefix: "b"}, nil)
	if err != nil || sug.Text != "y" {
		t.Fatalf("newer request: %q, %v", sug.Text, err)
	}
	if err := <-errc; !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older request returned %v, want ErrSuperseded", err)
	}
	if afterCancel > 1 {
		t.Errorf("older request produced %d pieces after the newer one came, want at most 1", afterCancel)
	}
}

func TestContextCancel(t *testing.T) {
	v := newFakeVocab(nil, nil, false)
	m := &fakeModel{v: v, say: say(strings.Repeat("x", 200)), bytes: 1, delay: time.Millisecond}
	c := newCompleter(m.lm(512), Options{MaxTokens: 200})
	ctx, cancel := context.WithCancel(context.Background())
	pieces := 0
	_, err := c.Complete(ctx, "t", Request{Prefix: "a"}, func(string) {
		pieces++
		if pieces == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || pieces > 4 {
		t.Errorf("err %v after %d pieces, want context.Canceled within one more token", err, pieces)
	}
}

// After Close the model may be closed as well, so a late request must not open a session on it.
func TestCompleteAfterClose(t *testing.T) {
	m := &fakeModel{v: newFakeVocab(nil, nil, false), say: say("!"), bytes: 1}
	c := newCompleter(m.lm(512), Options{})
	if _, err := c.Complete(context.Background(), "a", Request{Prefix: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Complete(context.Background(), "b", Request{Prefix: "hi"}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Complete after Close: %v, want ErrClosed", err)
	}
	if len(m.sessions) != 1 {
		t.Errorf("%d sessions opened, want only the one before Close", len(m.sessions))
	}
	if n, _ := c.Sessions(); n != 0 {
		t.Errorf("%d sessions open after Close", n)
	}
}
