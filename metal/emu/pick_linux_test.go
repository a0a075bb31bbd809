package emu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

// refPick is the CPU sampler's arithmetic on the k largest logits (no tie at the k-th): the
// softmax of the logits times inv in float64, walked in id order with u times the total.
// It also returns how close u·total came to a boundary of the walk, where float32 arithmetic
// on the device may fall on the other side.
func refPick(ids []int32, vals []float32, k int, inv float32, u float64) (int32, float64) {
	type cand struct {
		id int32
		v  float32
	}
	c := make([]cand, k)
	for i := range c {
		c[i] = cand{ids[i], vals[i] * inv}
	}
	slices.SortFunc(c, func(a, b cand) int { return int(a.id - b.id) })
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
	var total float64
	for i := range c {
		c[i].v = float32(float64(c[i].v) / sum)
		total += float64(c[i].v)
	}
	x := u * total
	margin := math.Inf(1)
	for _, e := range c {
		margin = min(margin, math.Abs(x))
		x -= float64(e.v)
		if x < 0 {
			return e.id, min(margin, math.Abs(x))
		}
	}
	return c[len(c)-1].id, 0
}

func refLogSumExp(vals []float32) float64 {
	m := math.Inf(-1)
	for _, v := range vals {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range vals {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// TestPick compares device picks with the sort-based reference (refTop) on sizes that are and
// are not multiples of the kernels' tiles, through one to three top-k stages, with normal
// logits, few distinct values (many ties) and a mix of NaN, ±Inf, ±0 and negatives: the top candidates exactly, the log-sum-exp closely, a greedy pick
// exactly, a sampled pick exactly unless u lands within float32 rounding of a boundary of the
// walk (the host checks those against its own arithmetic), and Unsure exactly when a logit is
// NaN or +Inf or all are -Inf. Two picks are in flight at once, each step embedding the last
// step's pick on the device.
func TestPick(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	be, err := metal.New(emu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	boundary := 0
	for _, n := range []int{1, 31, 32, 1000, 4096, 12289, 32007} {
		for _, kind := range []string{"normal", "ties", "special", "inf", "neginf"} {
			vals := logitSet(rng, kind[:min(len(kind), 7)], n)
			switch kind {
			case "inf":
				vals = logitSet(rng, "normal", n)
				vals[rng.IntN(n)] = float32(math.Inf(1))
			case "neginf":
				vals = make([]float32, n)
				for i := range vals {
					vals[i] = float32(math.Inf(-1))
				}
			}
			buf := upload(t, be, vals)
			unsure := false
			for _, v := range vals {
				unsure = unsure || v != v || math.IsInf(float64(v), 1)
			}
			unsure = unsure || kind == "neginf"
			for _, spec := range []backend.PickSpec{
				{Top: 1}, {Top: min(n, 5)}, {TopK: min(n, 1), Temperature: 0.7, Top: min(n, 2)},
				{TopK: min(n, 40), Temperature: 1.3, Top: min(n, 41)}, {TopK: min(n, 63), Temperature: 1, Top: min(n, 64)},
			} {
				if spec.TopK == n {
					spec.Top = n
				}
				u := rng.Float64()
				be.Pick(buf, n, spec, u)
				if err := be.Commit(); err != nil {
					t.Fatalf("n=%d %s %+v: %v", n, kind, spec, err)
				}
				p := backend.Pick{IDs: make([]int32, spec.Top), Logits: make([]float32, spec.Top)}
				if err := be.Picked(&p); err != nil {
					t.Fatal(err)
				}
				wantIDs, wantVals := refTop(vals, spec.Top)
				if p.Unsure != unsure {
					t.Errorf("n=%d %s %+v: unsure %v, want %v", n, kind, spec, p.Unsure, unsure)
				}
				if !slices.Equal(p.IDs, wantIDs) || !slices.Equal(p.Logits, wantVals) {
					t.Errorf("n=%d %s %+v: top %v %v, want %v %v", n, kind, spec, p.IDs, p.Logits, wantIDs, wantVals)
				}
				if unsure {
					continue
				}
				if lse := refLogSumExp(vals); math.Abs(float64(p.LogSumExp)-lse) > 1e-5*max(1, math.Abs(lse)) {
					t.Errorf("n=%d %s %+v: log-sum-exp %v, want %v", n, kind, spec, p.LogSumExp, lse)
				}
				want, margin := wantIDs[0], math.Inf(1)
				if spec.TopK > 0 {
					want, margin = refPick(wantIDs, wantVals, spec.TopK, 1/spec.Temperature, u)
				}
				if p.ID != want {
					if margin < 1e-5 {
						boundary++
						continue
					}
					t.Errorf("n=%d %s %+v u=%v: picked %d, want %d", n, kind, spec, u, p.ID, want)
				}
			}
		}
	}
	if boundary > 2 {
		t.Errorf("%d picks differ on a boundary of the walk", boundary)
	}
}
