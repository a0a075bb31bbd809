package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/engine"
)

// The whole chain with the bundled model: socket, protocol, completer, engine.
func TestBundledModelOverSocket(t *testing.T) {
	const dir = "../assets/models/laya-code"
	if _, err := os.Stat(dir); err != nil {
		t.Skip(err)
	}
	m, err := engine.Load(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	comp := complete.New(m, complete.Options{})
	defer comp.Close()
	_, path := startServer(t, comp, Options{})
	c := dial(t, path)

	var streamed strings.Builder
	f, err := c.Complete(context.Background(), Request{Prefix: "import numpy as ", Client: "e2e"}, func(s string) { streamed.WriteString(s) })
	if err != nil || f.Text != "np" || streamed.String() != "np" || f.Stop != "line" {
		t.Fatalf("final %+v (streamed %q), %v", f, streamed.String(), err)
	}
	// The next request of the field reuses its cache.
	f, err = c.Complete(context.Background(), Request{Prefix: "import numpy as np\nimport ", Client: "e2e"}, nil)
	if err != nil || f.Reused < 4 {
		t.Fatalf("second request %+v, %v", f, err)
	}

	// A long request canceled after its first piece ends at once.
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	_, err = c.Complete(ctx, Request{Prefix: "def main():\n", MaxTokens: 256, Client: "long"}, func(string) { cancel() })
	if err == nil {
		t.Skip("the model finished before the first piece was streamed")
	}
	f, err = c.Complete(context.Background(), Request{Prefix: "import os\nimport ", Client: "long", MaxTokens: 2}, nil)
	if err != nil {
		t.Fatalf("after cancel: %+v %v", f, err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("cancel and a short request took %v", d)
	}
}
