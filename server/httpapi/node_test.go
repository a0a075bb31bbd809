package httpapi

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

// nodePathEnv names the node_modules directory holding the openai npm package (.ci/run
// installs it).
const nodePathEnv = "LAYA_OPENAI_NODE_PATH"

// TestOpenAINodeClient runs the official openai npm client against the endpoint: completions,
// streaming, models.list, and a wrong key. It is skipped unless LAYA_OPENAI_NODE_PATH is set.
func TestOpenAINodeClient(t *testing.T) {
	nodePath := os.Getenv(nodePathEnv)
	if nodePath == "" {
		t.Skipf("%s not set", nodePathEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not installed: %v", nodePathEnv, err)
	}
	e := &echo{}
	url := start(t, e, Options{Key: testKey, ModelName: "laya-code"})
	cmd := exec.Command(node, "testdata/openai_client.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath, "LAYA_URL="+url, "LAYA_KEY="+testKey)
	var stderr []byte
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var got struct {
		Completion struct {
			Object, Text, Finish string
			Total                int
		}
		Stream struct {
			Text, Finish string
			Chunks       int
		}
		Models   []string
		WrongKey string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	if c := got.Completion; c.Object != "text_completion" || c.Text != "<def add(a, b):>" || c.Finish != "stop" || c.Total != 7+len(c.Text) {
		t.Errorf("completion: %+v", c)
	}
	// One event per piece, then the one with finish_reason.
	if s := got.Stream; s.Text != "<for i in>" || s.Finish != "stop" || s.Chunks != len("<for i in>")+1 {
		t.Errorf("stream: %+v", s)
	}
	if !reflect.DeepEqual(got.Models, []string{"laya-code"}) {
		t.Errorf("models: %v", got.Models)
	}
	if got.WrongKey != "AuthenticationError 401" {
		t.Errorf("wrong key: %s", got.WrongKey)
	}
	if c := e.last(t); c.req.Suffix != "" || c.req.Prefix != "for i in" || c.req.MaxTokens != 8 {
		t.Errorf("the completer got %+v", c.req)
	}
}
