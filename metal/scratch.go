package metal

import "fmt"

// Scratch buffers hold what an operation computes on the way to its output: a folded norm's
// normalized rows, a matmul's output before it is added to the residual, a gated unit's gate
// and up projections. Each role has one buffer, grown on demand and shared by every call; one
// per role keeps their sizes steady over a step, so only a step with more rows grows them.
const (
	scratchNorm = iota // a folded Norm's rows
	scratchTmp         // MatMulAdd's product
	scratchGLU         // GLU's gate and up projections
	scratchAttn        // decode attention's parts of a split context
	numScratch
)

type scratchBuf struct {
	h Buf
	n int // float32 values
}

// scratchArg returns role's scratch buffer, holding at least n values.
func (b *Backend) scratchArg(role, n int) (Arg, bool) {
	s := &b.scratch[role]
	if s.n >= n {
		return Arg{Buf: s.h}, true
	}
	h, err := b.dev.NewBuffer(4 * max(n, 1))
	if err != nil {
		b.fail(fmt.Errorf("metal: scratch of %d values: %w", n, err))
		return Arg{}, false
	}
	if s.n > 0 {
		// Dispatches submitted or recorded before the next wait may bind the old buffer, so it
		// is freed after that wait. No later plan binds it: a logged call holds its scratch in
		// its callOp, so one made with the old buffer never matches a new call.
		b.droppedMu.Lock()
		b.dropped = append(b.dropped, s.h)
		b.droppedMu.Unlock()
	}
	s.h, s.n = h, n
	return Arg{Buf: h}, true
}
