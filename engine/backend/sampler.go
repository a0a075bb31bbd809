package backend

import "github.com/layaapp/laya/engine/tensor"

// PickSpec says how a Sampler picks a token from logits.
type PickSpec struct {
	// TopK > 0 samples among the TopK largest logits, each divided by Temperature, with the
	// uniform value given to Pick, as the CPU sampler does (softmax, then a walk in id order);
	// TopK 0 takes the largest logit, the lower id among equals.
	TopK        int
	Temperature float32
	// Top is how many of the largest logits Picked reports, at least 1 and at least TopK+1
	// when sampling, so the caller can see a tie at the TopK-th (HF keeps every token tied
	// with it, which the device's pick does not).
	Top int
}

// Pick is the outcome of a device pick.
type Pick struct {
	// ID is the token the device chose; the next step's EmbedPicked reads it.
	ID int32
	// LogSumExp is log Σ exp(logit) over all the logits, the normalizer of their log-softmax.
	LogSumExp float32
	// Unsure is set when a logit is NaN or +Inf or every logit is -Inf: then ID and LogSumExp
	// follow the device's ranking (NaN as -Inf), not the CPU sampler's, and the caller must
	// pick from the logits themselves.
	Unsure bool
	// IDs and Logits are the spec's Top largest logits, largest first, lower id first among
	// equals (NaN as -Inf); the caller gives them the length Top.
	IDs    []int32
	Logits []float32
}

// Sampler is an optional capability of a backend, detected with a type assertion like
// Recurrent: it picks a step's token on the device, at the end of the step, and embeds it in
// the next step without the host, so the engine can queue step t+1 before it waits for step t.
// Picks are reported in the order they were made; Read and Sync drop picks not yet reported.
type Sampler interface {
	// MaxPickTop is the largest PickSpec.Top the backend accepts.
	MaxPickTop() int
	// Pick records, at the end of the pending step, the pick of a token from the first n values
	// of logits as spec says; u in [0, 1) is the uniform value a sampling pick uses.
	Pick(logits Buffer, n int, spec PickSpec, u float64)
	// EmbedPicked records the lookup of the token picked at the end of the previous step into
	// dst (one row of table's width).
	EmbedPicked(dst Buffer, table *tensor.Tensor)
	// Commit submits the recorded step without waiting for it and reports errors of recording
	// it (the step is then dropped).
	Commit() error
	// Picked waits for the step of the oldest pick not yet reported and fills p, whose IDs and
	// Logits have the length of that pick's PickSpec.Top.
	Picked(p *Pick) error
}
