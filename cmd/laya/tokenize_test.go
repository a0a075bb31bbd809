package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestTokenizeCLI checks the output format; the ids are HuggingFace's (testdata vocab tests).
func TestTokenizeCLI(t *testing.T) {
	const llama = "../../testdata/tokenizer/llama2-tokenizer.json"
	cases := []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--tokenizer", llama, "--text", "Hello world"}, "", `{"ids":[1,15043,3186]}` + "\n"},
		{[]string{"--tokenizer", llama, "--no-special", "--text", "Hello world"}, "", `{"ids":[15043,3186]}` + "\n"},
		{[]string{"--tokenizer", llama, "--no-special", "--text", ""}, "", `{"ids":[]}` + "\n"},
		{[]string{"--model", "../../testdata/tokenizer", "--jsonl"}, "", ""},
		{[]string{"--tokenizer", llama, "--jsonl"},
			`{"text":"Hello world","add_special":false}` + "\n" + `{"text":" Hello, world!","add_special":true}` + "\n",
			`{"ids":[15043,3186],"decoded":"Hello world"}` + "\n" + `{"ids":[1,29871,15043,29892,3186,29991],"decoded":"<s>  Hello, world!"}` + "\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		err := runTokenize(c.args, strings.NewReader(c.stdin), &out)
		if c.args[1] == "../../testdata/tokenizer" {
			if err == nil {
				t.Errorf("%v: a directory without tokenizer.json loaded", c.args)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if out.String() != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.args, out.String(), c.want)
		}
	}
	for _, args := range [][]string{{"--text", "x"}, {"--tokenizer", llama, "--model", "x"}, {"--tokenizer", llama, "--jsonl"}} {
		stdin := ""
		if len(args) == 3 {
			stdin = "{not json\n"
		}
		if err := runTokenize(args, strings.NewReader(stdin), &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestTokenizeCLIModels runs --model on a model directory and on a GGUF file of the parity
// fixtures; the expected ids are HuggingFace's (the first long hf-case of the fixture's
// tokenizer).
func TestTokenizeCLIModels(t *testing.T) {
	data, err := os.ReadFile("../../testdata/tokenizer/hf-cases-tiny-llama.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var want []int32
	for line := range strings.SplitSeq(string(data), "\n") {
		var c struct {
			Text       string  `json:"text"`
			AddSpecial bool    `json:"add_special"`
			IDs        []int32 `json:"ids"`
		}
		if json.Unmarshal([]byte(line), &c) == nil && c.AddSpecial && len(c.Text) > 40 {
			text, want = c.Text, c.IDs
			break
		}
	}
	if want == nil {
		t.Fatal("hf-cases-tiny-llama has no long case")
	}
	wantOut, _ := json.Marshal(map[string][]int32{"ids": want})
	for _, model := range []string{"../../testdata/models/llama/hf", "../../testdata/models/llama/q8_0.gguf"} {
		var out bytes.Buffer
		if err := runTokenize([]string{"--model", model, "--text", text}, strings.NewReader(""), &out); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if got := strings.TrimSpace(out.String()); got != string(wantOut) {
			t.Errorf("%s:\n got %s\nwant %s", model, got, wantOut)
		}
	}
}
