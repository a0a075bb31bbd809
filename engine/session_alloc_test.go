package engine

import (
	"context"
	"testing"

	"github.com/layaapp/laya/internal/fixtures"
)

// TestGenerateAllocs: Generate allocates a fixed number of times per call, not per token. The
// bundled model generates 8 and then 64 greedy tokens from the same prompt; every extra token
// would show up as a difference in the count.
func TestGenerateAllocs(t *testing.T) {
	m, err := Load(fixtures.Bundled(t), Options{Backend: "cpu", Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := m.Tokenizer().Encode("def fibonacci(n):\n    if n < 2:\n", true)
	s := m.NewSession()
	emitted := 0
	emit := func(Token) error { emitted++; return nil }
	allocs := func(n int) float64 {
		p := Sampling{MaxTokens: n, IgnoreEOS: true}
		return testing.AllocsPerRun(3, func() {
			res, err := s.Generate(context.Background(), prompt, p, emit)
			if err != nil || len(res.IDs) != n {
				t.Fatalf("Generate: %d tokens, %v", len(res.IDs), err)
			}
		})
	}
	short, long := allocs(8), allocs(64)
	t.Logf("allocations per Generate: %v for 8 tokens, %v for 64", short, long)
	if long != short {
		t.Errorf("Generate allocates %v times for 8 tokens but %v for 64: %.2f per extra token",
			short, long, (long-short)/56)
	}
	if emitted == 0 {
		t.Error("emit was never called")
	}
}
