package download

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func listing(names ...string) *Listing {
	l := &Listing{Repo: "org/m", Commit: strings.Repeat("a", 40)}
	for _, n := range names {
		l.Files = append(l.Files, File{Name: n, Size: 1})
	}
	return l
}

func names(fs []File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	slices.Sort(out)
	return out
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l     *Listing
		files []string
		want  []string
		err   string
	}{
		{
			name: "sharded safetensors",
			l: listing(".gitattributes", "README.md", "config.json", "tokenizer.json", "tokenizer_config.json",
				"special_tokens_map.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
				"model.safetensors.index.json", "onnx/model.safetensors", "vocab.json", "merges.txt"),
			want: []string{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
				"model.safetensors.index.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"},
		},
		{
			name: "old mlx weights name",
			l:    listing("config.json", "tokenizer.json", "weights.00.safetensors", "README.md"),
			want: []string{"config.json", "tokenizer.json", "weights.00.safetensors"},
		},
		{name: "one gguf", l: listing("README.md", "m-Q4_K_M.gguf"), want: []string{"m-Q4_K_M.gguf"}},
		{name: "many gguf", l: listing("m-Q8_0.gguf", "m-Q4_K_M.gguf"), err: "pick one with --file: m-Q4_K_M.gguf, m-Q8_0.gguf"},
		{name: "explicit", l: listing("m-Q8_0.gguf", "m-Q4_K_M.gguf"), files: []string{"m-Q8_0.gguf"}, want: []string{"m-Q8_0.gguf"}},
		{name: "explicit missing", l: listing("m-Q8_0.gguf"), files: []string{"m-Q2.gguf"}, err: `no file "m-Q2.gguf"`},
		{name: "no tokenizer", l: listing("config.json", "model.safetensors"), err: "no tokenizer.json"},
		{name: "no config", l: listing("tokenizer.json", "model.safetensors"), err: "no config.json"},
		{name: "no weights", l: listing("config.json", "pytorch_model.bin"), err: "neither .safetensors nor .gguf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.l, tc.files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tc.want) {
				t.Errorf("got %v, want %v", names(got), tc.want)
			}
		})
	}
}

// The expected numbers are worked out by hand from the samples each step leaves in the window.
func TestMeterRateAndETA(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	var got []Progress
	m := newMeter(func() time.Time { return now }, func(p Progress) { got = append(got, p) }, 100, 1100)
	step := func(at time.Duration, n int64) {
		now = t0.Add(at)
		m.add(n)
	}
	step(time.Second, 200) // samples (0s,100) (1s,300): 200 B/s, 800 B left
	step(1050*time.Millisecond, 50)
	step(2*time.Second, 100) // (0s,100) (1s,300) (2s,450): 350 B in 2 s
	step(8*time.Second, 150) // window drops 0s and 1s: (2s,450) (8s,600): 150 B in 6 s
	left, rate := 650.0, 175.0
	want := []Progress{
		{Done: 300, Total: 1100, Rate: 200, ETA: 4 * time.Second},
		{Done: 450, Total: 1100, Rate: 175, ETA: time.Duration(left / rate * float64(time.Second))},
		{Done: 600, Total: 1100, Rate: 25, ETA: 20 * time.Second},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// Discarded bytes restart the measurement instead of making the rate negative.
	step(9*time.Second, -100)
	if p := got[len(got)-1]; p.Done != 500 || p.Rate != 0 || p.ETA != 0 {
		t.Errorf("after discarding: %+v, want Done 500 and no rate yet", p)
	}
	if f := (Progress{Done: 1, Total: 4}).Fraction(); f != 0.25 {
		t.Errorf("Fraction = %v", f)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 10 << 20: "10.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
