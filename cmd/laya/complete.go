package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/server"
)

func init() {
	register("complete", "suggest how text goes on (uses the running server, else loads the model)", func(args []string) error {
		return runComplete(args, os.Stdin)
	})
}

// maxStdinPrefix bounds the prefix read with --stdin.
const maxStdinPrefix = 1 << 20

func runComplete(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: laya complete [flags] PREFIX\n       laya complete [flags] --stdin")
		fs.PrintDefaults()
	}
	fromStdin := fs.Bool("stdin", false, "read the prefix from stdin instead of the argument (at most 1 MiB)")
	suffix := fs.String("suffix", "", "text after the caret")
	asJSON := fs.Bool("json", false, "print the final protocol frame as JSON instead of the text")
	socket := fs.String("socket", "", socketUsage())
	client := fs.String("client", "cli", "session name: requests with the same name reuse each other's cache")
	app := fs.String("app", "", "application profile for prompt hints and stop rules")
	maxTokens := fs.Int("max-tokens", 0, "most tokens to generate (default: the server's)")
	timeout := fs.Duration("timeout", 0, "give up after this long, reading stdin included, printing nothing (0 = no limit)")
	fallback := fs.Bool("fallback", true, "load the model in-process when no server is running")
	model := fs.String("model", "", "model for the in-process fallback (default: $LAYA_MODEL or the bundled model)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// A prefix is always the argument, even "-" (a shell line of just "-"); --stdin reads one.
	if n := fs.NArg(); *fromStdin && n != 0 || !*fromStdin && n != 1 {
		fs.Usage()
		return errUsage
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	prefix := fs.Arg(0)
	if *fromStdin {
		var err error
		if prefix, err = readPrefix(ctx, stdin); err != nil {
			return err
		}
	}
	path := *socket
	if path == "" {
		var err error
		if path, err = config.SocketPath(); err != nil {
			return err
		}
	}

	req := server.Request{Prefix: prefix, Suffix: *suffix, Client: *client, App: *app, MaxTokens: *maxTokens}
	var f server.Frame
	c, err := server.Dial(ctx, path)
	switch {
	case err == nil:
		defer c.Close()
		if f, err = c.Complete(ctx, req, nil); err != nil {
			return err
		}
	case !*fallback || ctx.Err() != nil:
		return err
	default:
		fmt.Fprintf(os.Stderr, "laya: no server at %s; loading the model in-process\n", path)
		if f, err = completeLocal(ctx, *model, req); err != nil {
			return err
		}
	}
	if *asJSON {
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		_, err = fmt.Printf("%s\n", b)
		return err
	}
	_, err = fmt.Println(f.Text)
	return err
}

// readPrefix reads stdin to its end, giving up when ctx ends (--timeout). The reading goroutine
// is left blocked then; the process exits soon after.
func readPrefix(ctx context.Context, stdin io.Reader) (string, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(stdin, maxStdinPrefix+1))
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err != nil:
			return "", fmt.Errorf("reading the prefix from stdin: %w", r.err)
		case len(r.b) > maxStdinPrefix:
			return "", fmt.Errorf("the prefix on stdin is over %d bytes", maxStdinPrefix)
		}
		return string(r.b), nil
	case <-ctx.Done():
		return "", fmt.Errorf("reading the prefix from stdin: %w", ctx.Err())
	}
}

// completeLocal answers req with a model loaded for this one request.
func completeLocal(ctx context.Context, model string, req server.Request) (server.Frame, error) {
	if model == "" {
		var err error
		if model, err = models.Default(); err != nil {
			return server.Frame{}, err
		}
	}
	m, err := engine.Load(model, engine.Options{})
	if err != nil {
		return server.Frame{}, err
	}
	defer m.Close()
	comp := complete.New(m, complete.Options{})
	defer comp.Close()
	creq, err := req.Completion()
	if err != nil {
		return server.Frame{}, err
	}
	sug, err := comp.Complete(ctx, req.Client, creq, nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return server.Frame{}, fmt.Errorf("timed out: %w", err)
		}
		return server.Frame{}, err
	}
	return server.Final(json.RawMessage(`"local"`), sug, nil), nil
}
