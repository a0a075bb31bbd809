package engine

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// maxLogprobs bounds Sampling.Logprobs so a request cannot make every step scan for a huge top-N.
const maxLogprobs = 100

// defaultRepeatWindow is the RepeatWindow used when Sampling leaves it 0.
const defaultRepeatWindow = 64

// check reports a Sampling no generation could honor.
func (p *Sampling) check(vocab int) error {
	switch {
	case p.MaxTokens < 0:
		return fmt.Errorf("engine: max tokens %d < 0", p.MaxTokens)
	case !(p.Temperature >= 0) || math.IsInf(float64(p.Temperature), 0):
		return fmt.Errorf("engine: temperature %g must be >= 0", p.Temperature)
	case p.TopK < 0:
		return fmt.Errorf("engine: top_k %d < 0", p.TopK)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("engine: top_p %g outside [0, 1]", p.TopP)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fmt.Errorf("engine: min_p %g outside [0, 1]", p.MinP)
	case !(p.RepeatPenalty >= 0) || math.IsInf(float64(p.RepeatPenalty), 0):
		return fmt.Errorf("engine: repeat penalty %g must be >= 0", p.RepeatPenalty)
	case p.RepeatWindow < 0:
		return fmt.Errorf("engine: repeat window %d < 0", p.RepeatWindow)
	case p.Logprobs < 0 || p.Logprobs > min(maxLogprobs, vocab):
		return fmt.Errorf("engine: logprobs %d outside [0, %d]", p.Logprobs, min(maxLogprobs, vocab))
	}
	for _, ids := range [][]int32{p.StopTokens, p.FirstTokens} {
		for _, id := range ids {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("engine: token id %d outside the vocabulary of %d", id, vocab)
			}
		}
	}
	for _, s := range p.StopStrings {
		if s == "" {
			return fmt.Errorf("engine: empty stop string")
		}
	}
	return nil
}

// rng is xoshiro256** seeded through splitmix64: small, fast, and the same stream for the same
// seed on every platform, which math/rand/v2 does not promise across Go releases.
type rng struct{ s [4]uint64 }

func (r *rng) seed(seed uint64) {
	for i := range r.s {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		r.s[i] = z ^ z>>31
	}
}

func (r *rng) next() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// float64 returns a uniform value in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) * 0x1p-53 }

// cand is a token still in the running and its logit or, after softmax, its probability.
type cand struct {
	id int32
	v  float32
}

// sampler holds one session's sampling state; every buffer is vocabulary-sized and allocated
// once, so picking a token allocates nothing.
type sampler struct {
	rng   rng
	work  []float32 // penalized logits
	cands []cand
	heap  []float32 // top-k threshold selection
	seen  []uint32  // seen[id] == stamp: id already handled this step
	stamp uint32
}

func newSampler(vocab int) *sampler {
	return &sampler{
		work:  make([]float32, vocab),
		cands: make([]cand, 0, vocab),
		heap:  make([]float32, 0, vocab),
		seen:  make([]uint32, vocab),
	}
}

// nextStamp starts a new dedup round over seen.
func (s *sampler) nextStamp() uint32 {
	s.stamp++
	if s.stamp == 0 {
		clear(s.seen)
		s.stamp = 1
	}
	return s.stamp
}

// pick chooses the next token from raw logits, which it leaves unchanged. recent holds the
// tokens the repetition penalty applies to; only restricts the choice when non-empty.
func (s *sampler) pick(logits []float32, p *Sampling, recent, only []int32) int32 {
	return s.pickWith(logits, p, recent, only, s.uniform(p))
}

// uniform draws the one value in [0, 1) a pick at p's temperature uses; greedy picks draw none.
func (s *sampler) uniform(p *Sampling) float64 {
	if p.Temperature == 0 {
		return 0
	}
	return s.rng.float64()
}

// pickWith is pick with the uniform value u drawn beforehand (uniform).
func (s *sampler) pickWith(logits []float32, p *Sampling, recent, only []int32, u float64) int32 {
	c := s.candidates(logits, p, recent, only)
	if p.Temperature == 0 {
		best := c[0]
		for _, x := range c[1:] {
			if x.v > best.v {
				best = x
			}
		}
		return best.id
	}
	return draw(s.filter(c, p), u)
}

// draw walks the candidates' probabilities in their order until u times their total is used up.
func draw(c []cand, u float64) int32 {
	var total float64
	for _, x := range c {
		total += float64(x.v)
	}
	u *= total
	for _, x := range c {
		u -= float64(x.v)
		if u < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id // u landed on the rounding slack at the end
}

// candidates returns the tokens allowed (all, or only) with their logits after the repetition
// penalty, in s.cands.
func (s *sampler) candidates(logits []float32, p *Sampling, recent, only []int32) []cand {
	work := s.work[:len(logits)]
	copy(work, logits)
	if p.RepeatPenalty > 0 && p.RepeatPenalty != 1 {
		st := s.nextStamp()
		for _, id := range recent {
			if s.seen[id] == st {
				continue
			}
			s.seen[id] = st
			if work[id] > 0 {
				work[id] /= p.RepeatPenalty
			} else {
				work[id] *= p.RepeatPenalty
			}
		}
	}
	c := s.cands[:0]
	if len(only) > 0 {
		st := s.nextStamp()
		for _, id := range only {
			if s.seen[id] != st {
				s.seen[id] = st
				c = append(c, cand{id, work[id]})
			}
		}
		return c
	}
	for id, v := range work {
		c = append(c, cand{int32(id), v})
	}
	return c
}

// filter applies temperature, top_k, top_p and min_p in HuggingFace's order and returns the
// surviving candidates with their probabilities before renormalization.
func (s *sampler) filter(c []cand, p *Sampling) []cand {
	inv := 1 / p.Temperature
	for i := range c {
		c[i].v *= inv
	}
	if p.TopK > 0 && p.TopK < len(c) {
		// HF keeps every token whose logit reaches the k-th largest, ties included.
		thr := s.kthLargest(c, p.TopK)
		c = slices.DeleteFunc(c, func(x cand) bool { return x.v < thr })
	}
	softmax(c)
	if p.TopP > 0 && p.TopP < 1 {
		slices.SortFunc(c, func(a, b cand) int { return cmp.Compare(b.v, a.v) })
		// Keep each token while the mass of the tokens ranked above it is below TopP.
		var above float64
		n := 0
		for n < len(c) && above < float64(p.TopP) {
			above += float64(c[n].v)
			n++
		}
		c = c[:n]
	}
	if p.MinP > 0 {
		var top float32
		for _, x := range c {
			top = max(top, x.v)
		}
		thr := p.MinP * top
		c = slices.DeleteFunc(c, func(x cand) bool { return x.v < thr })
	}
	return c
}

// kthLargest returns the k-th largest value of c (1 <= k < len(c)) with a size-k min-heap.
func (s *sampler) kthLargest(c []cand, k int) float32 {
	h := s.heap[:0]
	for _, x := range c {
		if len(h) < k {
			h = append(h, x.v)
			for i := len(h) - 1; i > 0; {
				parent := (i - 1) / 2
				if h[parent] <= h[i] {
					break
				}
				h[parent], h[i] = h[i], h[parent]
				i = parent
			}
		} else if x.v > h[0] {
			h[0] = x.v
			for i := 0; ; {
				l, small := 2*i+1, i
				if l < k && h[l] < h[small] {
					small = l
				}
				if r := l + 1; r < k && h[r] < h[small] {
					small = r
				}
				if small == i {
					break
				}
				h[i], h[small] = h[small], h[i]
				i = small
			}
		}
	}
	return h[0]
}

// softmax replaces the logits in c by probabilities.
func softmax(c []cand) {
	m := float32(math.Inf(-1))
	for _, x := range c {
		m = max(m, x.v)
	}
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].v - m))
		c[i].v = float32(e)
		sum += e
	}
	for i := range c {
		c[i].v = float32(float64(c[i].v) / sum)
	}
}

// logSumExp is log(sum(exp(logits))), the normalizer of log-softmax, computed in float64.
func logSumExp(logits []float32) float64 {
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = max(m, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - m))
	}
	return float64(m) + math.Log(sum)
}

// topLogprobs fills dst with the len(dst) largest logits as log-probabilities under lse, most
// likely first, lower id first among equals.
func topLogprobs(dst []TokenLogprob, logits []float32, lse float64) {
	if len(dst) == 0 {
		return
	}
	n := 0
	for id, v := range logits {
		if n == len(dst) && v <= dst[n-1].Logprob {
			continue
		}
		i := min(n, len(dst)-1)
		for i > 0 && dst[i-1].Logprob < v {
			dst[i] = dst[i-1]
			i--
		}
		dst[i] = TokenLogprob{int32(id), v}
		n = min(n+1, len(dst))
	}
	for i := range dst {
		dst[i].Logprob = float32(float64(dst[i].Logprob) - lse)
	}
}
