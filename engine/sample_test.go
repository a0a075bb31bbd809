package engine

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// dist runs the sampler's filters on logits and returns the surviving distribution, renormalized,
// keyed by token id.
func dist(t *testing.T, logits []float32, p Sampling) map[int32]float64 {
	t.Helper()
	s := newSampler(len(logits))
	c := s.filter(s.candidates(logits, &p, nil, nil), &p)
	var sum float64
	for _, x := range c {
		sum += float64(x.v)
	}
	d := map[int32]float64{}
	for _, x := range c {
		d[x.id] = float64(x.v) / sum
	}
	return d
}

func checkDist(t *testing.T, name string, got map[int32]float64, want map[int32]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: kept %v, want %v", name, got, want)
		return
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || math.Abs(g-w) > 1e-6 {
			t.Errorf("%s: p(%d) = %v (kept %v), want %v", name, id, g, ok, w)
		}
	}
}

func logs(ps ...float64) []float32 {
	l := make([]float32, len(ps))
	for i, p := range ps {
		l[i] = float32(math.Log(p))
	}
	return l
}

func TestFilters(t *testing.T) {
	// Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1; expectations worked out by hand from
	// the HF definitions.
	l := logs(0.5, 0.3, 0.15, 0.05)
	checkDist(t, "none", dist(t, l, Sampling{Temperature: 1}), map[int32]float64{0: 0.5, 1: 0.3, 2: 0.15, 3: 0.05})
	checkDist(t, "top_k 2", dist(t, l, Sampling{Temperature: 1, TopK: 2}), map[int32]float64{0: 0.625, 1: 0.375})
	checkDist(t, "top_p 0.7", dist(t, l, Sampling{Temperature: 1, TopP: 0.7}), map[int32]float64{0: 0.625, 1: 0.375})
	checkDist(t, "top_p 0.85", dist(t, l, Sampling{Temperature: 1, TopP: 0.85}), map[int32]float64{0: 0.5 / 0.95, 1: 0.3 / 0.95, 2: 0.15 / 0.95})
	checkDist(t, "top_p 0.4", dist(t, l, Sampling{Temperature: 1, TopP: 0.4}), map[int32]float64{0: 1})
	checkDist(t, "min_p 0.2", dist(t, l, Sampling{Temperature: 1, MinP: 0.2}), map[int32]float64{0: 0.5 / 0.95, 1: 0.3 / 0.95, 2: 0.15 / 0.95})
	checkDist(t, "min_p 0.5", dist(t, l, Sampling{Temperature: 1, MinP: 0.5}), map[int32]float64{0: 0.625, 1: 0.375})
	// Temperature 2 takes square roots of the probabilities before renormalizing.
	r := []float64{math.Sqrt(0.5), math.Sqrt(0.3), math.Sqrt(0.15), math.Sqrt(0.05)}
	sum := r[0] + r[1] + r[2] + r[3]
	checkDist(t, "temperature 2", dist(t, l, Sampling{Temperature: 2}), map[int32]float64{0: r[0] / sum, 1: r[1] / sum, 2: r[2] / sum, 3: r[3] / sum})
	// Top-k keeps ties with the k-th value, as HF does.
	checkDist(t, "top_k ties", dist(t, []float32{1, 2, 2, 0}, Sampling{Temperature: 1, TopK: 1}), map[int32]float64{1: 0.5, 2: 0.5})
	// Unordered input: top_k 2 of logits 1, 3, 2, 0 keeps ids 1 and 2 with e^3 : e^2.
	e := math.E
	checkDist(t, "top_k unordered", dist(t, []float32{1, 3, 2, 0}, Sampling{Temperature: 1, TopK: 2}), map[int32]float64{1: e / (e + 1), 2: 1 / (e + 1)})
}

func TestRepeatPenalty(t *testing.T) {
	s := newSampler(5)
	p := Sampling{RepeatPenalty: 1.5}
	c := s.candidates([]float32{3, -2, 1, 0.5, 0}, &p, []int32{0, 1, 0, 4}, nil)
	// Positive logits are divided, negative and zero ones multiplied, each token once however
	// often it repeats.
	want := []float32{2, -3, 1, 0.5, 0}
	for i, x := range c {
		if x.id != int32(i) || x.v != want[i] {
			t.Fatalf("penalized logits %v, want %v", c, want)
		}
	}
	// Greedy follows the penalized logits: 3/4 < 1 makes id 2 the choice.
	p = Sampling{RepeatPenalty: 4}
	if id := s.pick([]float32{3, -2, 1, 0.5, 0}, &p, []int32{0}, nil); id != 2 {
		t.Errorf("greedy with penalty picked %d, want 2", id)
	}
	p = Sampling{}
	if id := s.pick([]float32{3, -2, 1, 0.5, 0}, &p, []int32{0}, nil); id != 0 {
		t.Errorf("greedy without penalty picked %d, want 0", id)
	}
}

func TestFirstTokens(t *testing.T) {
	s := newSampler(5)
	l := []float32{5, 1, 3, 2, 4}
	p := Sampling{}
	if id := s.pick(l, &p, nil, []int32{1, 3, 2, 3}); id != 2 {
		t.Errorf("greedy restricted to {1,2,3} picked %d, want 2", id)
	}
	p = Sampling{Temperature: 1, Seed: 7}
	s.rng.seed(p.Seed)
	for range 200 {
		if id := s.pick(l, &p, nil, []int32{1, 3}); id != 1 && id != 3 {
			t.Fatalf("sampling restricted to {1,3} picked %d", id)
		}
	}
}

func TestTemperatureFrequencies(t *testing.T) {
	// At temperature 0.5 logits 0, ln 2, ln 3 become weights 1, 4, 9.
	l := []float32{0, float32(math.Ln2), float32(math.Log(3))}
	p := Sampling{Temperature: 0.5, Seed: 1}
	s := newSampler(len(l))
	s.rng.seed(p.Seed)
	const n = 40000
	var counts [3]int
	for range n {
		counts[s.pick(l, &p, nil, nil)]++
	}
	for i, w := range []float64{1.0 / 14, 4.0 / 14, 9.0 / 14} {
		if f := float64(counts[i]) / n; math.Abs(f-w) > 0.01 {
			t.Errorf("token %d drawn with frequency %.4f, want %.4f", i, f, w)
		}
	}
}

func TestSeed(t *testing.T) {
	l := make([]float32, 50)
	draw := func(seed uint64) []int32 {
		s := newSampler(len(l))
		s.rng.seed(seed)
		p := Sampling{Temperature: 1, Seed: seed}
		var ids []int32
		for range 40 {
			ids = append(ids, s.pick(l, &p, nil, nil))
		}
		return ids
	}
	a, b, c := draw(42), draw(42), draw(43)
	if !slices.Equal(a, b) {
		t.Errorf("same seed gave %v and %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same draws %v", a)
	}
}

func TestRNGReference(t *testing.T) {
	// xoshiro256** from state {1, 2, 3, 4}: the first outputs follow by hand from the update
	// rule (rotl(s1*5, 7)*9, then the xor/shift state step).
	r := rng{s: [4]uint64{1, 2, 3, 4}}
	for i, want := range []uint64{11520, 0, 1509978240} {
		if got := r.next(); got != want {
			t.Errorf("output %d = %d, want %d", i, got, want)
		}
	}
}

func TestTopLogprobs(t *testing.T) {
	s := newSampler(1)
	s.rng.seed(3)
	logits := make([]float32, 300)
	for i := range logits {
		logits[i] = float32(s.rng.float64()*10 - 5)
	}
	logits[17] = logits[200] // a tie: the lower id comes first
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v))
	}
	lse := logSumExp(logits)
	if math.Abs(lse-math.Log(sum)) > 1e-9 {
		t.Fatalf("logSumExp %v, want %v", lse, math.Log(sum))
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	for _, n := range []int{1, 5, 20} {
		top := make([]TokenLogprob, n)
		topLogprobs(top, logits, lse)
		for i, e := range top {
			want := float32(float64(logits[idx[i]]) - math.Log(sum))
			if e.ID != int32(idx[i]) || math.Abs(float64(e.Logprob-want)) > 1e-6 {
				t.Fatalf("top %d entry %d = %+v, want {%d %v}", n, i, e, idx[i], want)
			}
		}
	}
}

func TestStopHoldBack(t *testing.T) {
	stops := []string{"\n\n", "END"}
	for _, c := range []struct {
		text string
		at   int
		hold int
	}{
		{"abc", -1, 0},
		{"abc\n", -1, 1},
		{"abcEN", -1, 2},
		{"abc\n\nx", 3, 0},
		{"xENDy\n\n", 1, 0},
		{"E", -1, 1},
	} {
		if at := stopIndex(c.text, stops); at != c.at {
			t.Errorf("stopIndex(%q) = %d, want %d", c.text, at, c.at)
		}
		if c.at < 0 {
			if h := holdBack(c.text, stops); h != c.hold {
				t.Errorf("holdBack(%q) = %d, want %d", c.text, h, c.hold)
			}
		}
	}
}

func TestSamplingCheck(t *testing.T) {
	bad := []Sampling{
		{MaxTokens: -1}, {Temperature: -1}, {Temperature: float32(math.NaN())}, {TopK: -1},
		{TopP: 1.5}, {MinP: -0.1}, {RepeatPenalty: -2}, {RepeatWindow: -1}, {Logprobs: 101},
		{Logprobs: 11}, {StopTokens: []int32{10}}, {FirstTokens: []int32{-1}}, {StopStrings: []string{""}},
	}
	for _, p := range bad {
		if err := p.check(10); err == nil {
			t.Errorf("check accepted %+v", p)
		}
	}
	good := Sampling{MaxTokens: 5, Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, Logprobs: 5, StopTokens: []int32{9}}
	if err := good.check(10); err != nil {
		t.Errorf("check rejected %+v: %v", good, err)
	}
}

func TestPickAllocs(t *testing.T) {
	l := make([]float32, 1000)
	for i := range l {
		l[i] = float32(i%37) / 10
	}
	s := newSampler(len(l))
	recent := []int32{1, 2, 3, 36}
	for _, p := range []Sampling{{}, {Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.2}, {Temperature: 1, TopP: 0.5}} {
		if a := testing.AllocsPerRun(20, func() { s.pick(l, &p, recent, nil) }); a != 0 {
			t.Errorf("pick with %+v allocates %v times", p, a)
		}
	}
}
