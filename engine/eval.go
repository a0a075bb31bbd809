package engine

import (
	"context"
	"fmt"
	"math"
)

// evalRows bounds how many positions one Eval pass computes logits for, since each row of logits
// takes Vocab floats.
const evalRows = 64

// Eval scores ids as a language-modeling benchmark: for i := 0; i < len(ids)-1; i += window, the
// inputs ids[i:min(i+window, len(ids)-1)] run from an empty cache and each predicts the id after
// it. It reports the mean negative log-likelihood of those targets, its exp (perplexity), and how
// often the target was the most likely token.
func (m *Model) Eval(ctx context.Context, ids []int32, window int) (EvalResult, error) {
	var r EvalResult
	vocab := m.cfg.Vocab
	switch {
	case window <= 0 || window > m.ctxLen:
		return r, fmt.Errorf("engine: eval window %d outside [1, %d]", window, m.ctxLen)
	case len(ids) < 2:
		return r, fmt.Errorf("engine: eval needs at least 2 tokens, got %d", len(ids))
	}
	for _, id := range ids {
		if id < 0 || int(id) >= vocab {
			return r, fmt.Errorf("engine: eval token %d outside the vocabulary of %d", id, vocab)
		}
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return r, errClosed
	}
	cache := m.newCache(window)
	dev := m.be.NewBuffer(evalRows * vocab)
	m.mu.Unlock()
	logits := make([]float32, evalRows*vocab)

	var nll float64
	hits := 0
	for i := 0; i < len(ids)-1; i += window {
		end := min(i+window, len(ids)-1)
		cache.Truncate(0)
		for j := i; j < end; j += evalRows {
			if err := ctx.Err(); err != nil {
				return r, err
			}
			chunk := ids[j:min(j+evalRows, end)]
			m.mu.Lock()
			err := m.forward(cache, chunk, j-i, nil, dev)
			if err == nil {
				err = m.be.Read(logits[:len(chunk)*vocab], dev)
			}
			m.mu.Unlock()
			if err != nil {
				return r, fmt.Errorf("engine: eval forward pass: %w", err)
			}
			for k := range chunk {
				row := logits[k*vocab : (k+1)*vocab]
				target := ids[j+k+1]
				nll += logSumExp(row) - float64(row[target])
				best := 0
				for id, v := range row {
					if v > row[best] {
						best = id
					}
				}
				if int32(best) == target {
					hits++
				}
				r.Tokens++
			}
		}
	}
	r.NLL = nll / float64(r.Tokens)
	r.PPL = math.Exp(r.NLL)
	r.Top1 = float64(hits) / float64(r.Tokens)
	return r, nil
}
