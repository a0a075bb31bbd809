package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/layaapp/laya/engine/tokenizer"
	"github.com/layaapp/laya/engine/weights"
	"github.com/layaapp/laya/internal/fsutil"
)

func init() {
	register("tokenize", "tokenize text with a model's tokenizer", func(args []string) error {
		return runTokenize(args, os.Stdin, os.Stdout)
	})
}

// maxJSONLLine bounds one --jsonl input line.
const maxJSONLLine = 64 << 20

func runTokenize(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	tokFile := fs.String("tokenizer", "", "tokenizer.json file")
	model := fs.String("model", "", "model directory (with tokenizer.json) or .gguf file")
	noSpecial := fs.Bool("no-special", false, "do not add special tokens (HF add_special_tokens=False)")
	text := fs.String("text", "", "text to tokenize")
	jsonl := fs.Bool("jsonl", false, `read {"text","add_special"} lines from stdin; print {"ids","decoded"} per line`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if (*tokFile == "") == (*model == "") {
		return errors.New("give exactly one of --tokenizer or --model")
	}
	if set := setFlags(fs); set["text"] == *jsonl {
		return errors.New("give exactly one of --text or --jsonl")
	}
	tk, err := loadCLITokenizer(*tokFile, *model)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if !*jsonl {
		return enc.Encode(struct {
			IDs []int32 `json:"ids"`
		}{nonNil(tk.Encode(*text, !*noSpecial))})
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), maxJSONLLine)
	for line := 1; sc.Scan(); line++ {
		var in struct {
			Text       *string `json:"text"`
			AddSpecial *bool   `json:"add_special"`
		}
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			return fmt.Errorf("stdin line %d: %w", line, err)
		}
		if in.Text == nil {
			return fmt.Errorf("stdin line %d: missing \"text\"", line)
		}
		add := !*noSpecial
		if in.AddSpecial != nil {
			add = *in.AddSpecial
		}
		ids := tk.Encode(*in.Text, add)
		if err := enc.Encode(struct {
			IDs     []int32 `json:"ids"`
			Decoded string  `json:"decoded"`
		}{nonNil(ids), tk.Decode(ids, false)}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// loadCLITokenizer loads a tokenizer.json file, a model directory's tokenizer.json, or the
// tokenizer inside a .gguf file.
func loadCLITokenizer(tokFile, model string) (*tokenizer.Tokenizer, error) {
	if model != "" {
		st, err := os.Stat(model)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			m, err := weights.Open(model)
			if err != nil {
				return nil, err
			}
			defer m.Close()
			if m.TokenizerJSON != nil {
				return tokenizer.FromJSON(m.TokenizerJSON)
			}
			if m.GGUFVocab == nil {
				return nil, fmt.Errorf("%s: no tokenizer", model)
			}
			return tokenizer.FromGGUF(m.GGUFVocab)
		}
		tokFile = filepath.Join(model, "tokenizer.json")
	}
	data, err := fsutil.ReadFileLimit(tokFile, tokenizer.MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	return tokenizer.FromJSON(data)
}
