package engine

import (
	"fmt"
	"slices"

	"github.com/layaapp/laya/engine/backend"
)

// maxDeviceTop bounds the candidates a device pick reports (backend.PickSpec.Top); the session
// keeps room for that many.
const maxDeviceTop = 64

// devicePicks runs a Generate's decode steps with the token picked on the device
// (backend.Sampler): each step ends with the pick, and the next step, which embeds the picked
// token on the device, is committed before the host waits for this one, so the device is not
// idle while the host reports a token. The host checks each pick against the CPU sampler's
// rule and, where the device cannot be sure (non-finite logits, a tie at the k-th, a sampled
// pick that rounding moved), runs the step again on the host path; so the tokens, the
// session's tokens and its cache length are exactly what the sequential loop gives.
//
// It holds the model's lock from start to close, because the other session's steps would
// reuse the device's pick and upload areas: sessions of one model then take turns by Generate
// instead of by token.
type devicePicks struct {
	s    *Session
	ds   backend.Sampler
	spec backend.PickSpec
	p    *Sampling
	// queued says a step for the next token is committed and its pick not yet reported.
	queued bool
	// u holds the uniform values of tokens drawn..drawn-3 (u[j%4] for token j): the value of
	// a step recorded again after a check failed is the one drawn first.
	u     [4]float64
	drawn int
	pick  backend.Pick
}

// deviceSpec is the device pick for p, if the device can make it: no repetition penalty,
// top_p or min_p, and at most maxTop candidates to report (the top-k plus one, the
// logprobs).
func deviceSpec(p *Sampling, vocab, maxTop int) (backend.PickSpec, bool) {
	if p.RepeatPenalty != 0 && p.RepeatPenalty != 1 || p.TopP > 0 && p.TopP < 1 || p.MinP > 0 {
		return backend.PickSpec{}, false
	}
	spec := backend.PickSpec{Top: max(1, p.Logprobs)}
	if p.Temperature > 0 {
		k := p.TopK
		if k == 0 || k > vocab {
			k = vocab
		}
		spec.TopK, spec.Temperature = k, p.Temperature
		spec.Top = max(spec.Top, min(k+1, vocab))
	}
	return spec, spec.Top <= min(maxTop, maxDeviceTop)
}

// newDevicePicks returns the device path for a Generate with p, holding the model's lock, or
// nil when the host path is to be used.
func (s *Session) newDevicePicks(p *Sampling) *devicePicks {
	m := s.m
	ds, ok := m.be.(backend.Sampler)
	if !ok || s.snaps != nil || p.MaxTokens < 2 {
		return nil
	}
	spec, ok := deviceSpec(p, m.cfg.Vocab, ds.MaxPickTop())
	if !ok {
		return nil
	}
	m.mu.Lock()
	d := &s.dev
	*d = devicePicks{s: s, ds: ds, spec: spec, p: p, drawn: -1,
		pick: backend.Pick{IDs: s.pickIDs[:spec.Top], Logits: s.pickLogits[:spec.Top]}}
	return d
}

// uniform is token j's uniform value, drawn in token order like the host path's.
func (d *devicePicks) uniform(j int) float64 {
	for d.drawn < j {
		d.drawn++
		d.u[d.drawn%len(d.u)] = d.s.smp.uniform(d.p)
	}
	return d.u[j%len(d.u)]
}

// close discards a step committed for a token that will not come and lets other sessions run.
func (d *devicePicks) close() {
	s := d.s
	if s.cache != nil && d.queued {
		s.cache.Truncate(len(s.tokens))
	}
	d.queued = false
	s.m.mu.Unlock()
}

// commit records the step whose input is in (nil: the token the device picked in the step
// before) at the end of the cache, with the pick of token j at its end, and submits it.
func (d *devicePicks) commit(in []int32, j int) error {
	s, m := d.s, d.s.m
	pos := s.cache.Len()
	err := m.forward(s.cache, in, pos, nil, nil)
	if err == nil {
		d.ds.Pick(m.act.logits, m.cfg.Vocab, d.spec, d.uniform(j))
		err = d.ds.Commit()
	}
	if err != nil {
		s.reset()
		return fmt.Errorf("engine: forward pass: %w", err)
	}
	d.queued = true
	return nil
}

// advance makes token id, which the loop keeps, part of the session, as the host path's step
// does: its step, committed already when the device picked id, else committed now with the
// pick of token next at its end.
func (d *devicePicks) advance(id int32, next int) error {
	s := d.s
	if !d.queued {
		s.one[0] = id
		if err := d.commit(s.one[:], next); err != nil {
			return err
		}
	}
	s.tokens = append(s.tokens, id)
	return nil
}

// next returns token i (i >= 1) with its log-probability and, in top, the most likely tokens.
// Its step is committed; when token i may not be the last (more), the step after it, which
// embeds the device's pick, is committed before the host waits.
func (d *devicePicks) next(i int, more bool, top []TokenLogprob) (Token, error) {
	s := d.s
	if more {
		if err := d.commit(nil, i+1); err != nil {
			return Token{}, err
		}
	}
	d.queued = more
	pk := &d.pick
	if err := d.ds.Picked(pk); err != nil {
		s.reset()
		return Token{}, fmt.Errorf("engine: device pick: %w", err)
	}
	if at := d.check(i); at >= 0 {
		tok := Token{ID: pk.ID, Logprob: float32(float64(pk.Logits[at]) - float64(pk.LogSumExp))}
		if len(top) > 0 {
			for j := range top {
				top[j] = TokenLogprob{pk.IDs[j], float32(float64(pk.Logits[j]) - float64(pk.LogSumExp))}
			}
			tok.Top = top
		}
		return tok, nil
	}
	// Run token i's step again and pick on the host; a step committed after it is dropped.
	d.queued = false
	n := len(s.tokens) - 1
	s.one[0] = s.tokens[n]
	s.cache.Truncate(n)
	s.tokens = s.tokens[:n]
	if err := s.stepLocked(s.one[:]); err != nil {
		return Token{}, err
	}
	return s.hostToken(d.p, s.smp.pickWith(s.logits, d.p, nil, nil, d.uniform(i)), top), nil
}

// check returns the index among the reported candidates of the device's pick of token i when
// it is the CPU sampler's, else -1.
func (d *devicePicks) check(i int) int {
	pk := &d.pick
	if pk.Unsure {
		return -1
	}
	k := d.spec.TopK
	if k == 0 {
		// The largest logit, the lower id among equals, as the CPU ranks.
		if pk.ID != pk.IDs[0] {
			return -1
		}
		return 0
	}
	inv := 1 / d.p.Temperature
	if k < len(pk.IDs) && pk.Logits[k]*inv == pk.Logits[k-1]*inv {
		return -1 // a tie at the k-th: the CPU sampler keeps every tied token
	}
	c := d.s.smp.cands[:0]
	for j := range k {
		c = append(c, cand{pk.IDs[j], pk.Logits[j]})
	}
	// The CPU sampler holds its candidates in id order.
	slices.SortFunc(c, func(a, b cand) int { return int(a.id - b.id) })
	if draw(d.s.smp.filter(c, d.p), d.uniform(i)) != pk.ID {
		return -1
	}
	return slices.Index(pk.IDs[:k], pk.ID)
}
