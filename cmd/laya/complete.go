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
	"github.com/layaapp/laya/engine"
	"github.com/layaapp/laya/server"
)

func init() {
	register("complete", "suggest how text goes on (uses the running server, else loads the model)", runComplete)
}

func runComplete(args []string) error {
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: laya complete [flags] PREFIX   (PREFIX - reads it from stdin)")
		fs.PrintDefaults()
	}
	suffix := fs.String("suffix", "", "text after the caret")
	asJSON := fs.Bool("json", false, "print the final protocol frame as JSON instead of the text")
	socket := fs.String("socket", "", socketUsage())
	client := fs.String("client", "cli", "session name: requests with the same name reuse each other's cache")
	app := fs.String("app", "", "application profile for prompt hints and stop rules")
	maxTokens := fs.Int("max-tokens", 0, "most tokens to generate (default: the server's)")
	timeout := fs.Duration("timeout", 0, "give up after this long, printing nothing (0 = no limit)")
	fallback := fs.Bool("fallback", true, "load the model in-process when no server is running")
	model := fs.String("model", "", "model for the in-process fallback (default: $LAYA_MODEL or the bundled model)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return flag.ErrHelp
	}
	prefix := fs.Arg(0)
	if prefix == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		if err != nil {
			return fmt.Errorf("reading the prefix: %w", err)
		}
		prefix = string(b)
	}
	path := *socket
	if path == "" {
		var err error
		if path, err = server.DefaultSocketPath(); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
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

// completeLocal answers req with a model loaded for this one request.
func completeLocal(ctx context.Context, model string, req server.Request) (server.Frame, error) {
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
