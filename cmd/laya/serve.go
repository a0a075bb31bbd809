package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/server"
	"github.com/layaapp/laya/server/httpapi"
)

func init() {
	register("serve", "keep the model warm and serve completions on the local socket", runServe)
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ef := addEngineFlags(fs)
	socket := fs.String("socket", "", socketUsage())
	openai := fs.String("openai-addr", "", "also serve HTTP (OpenAI /v1/completions, llama.cpp /infill, Ollama /api/generate) on this loopback address, e.g. 127.0.0.1:8642 (off by default)")
	keyFile := fs.String("api-key-file", "", "the HTTP endpoint's API key, created on first use (default: api-key next to config.toml)")
	noKey := fs.Bool("no-api-key", false, "serve the HTTP endpoint without an API key: every local user can use it")
	cacheMB := fs.Int("cache-mb", 512, "memory for the KV caches of all clients, in MiB")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *openai != "" {
		if err := checkLoopback(*openai); err != nil {
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

	key := ""
	if *openai != "" && !*noKey {
		if *keyFile == "" {
			cfg, err := config.Path()
			if err != nil {
				return err
			}
			*keyFile = filepath.Join(filepath.Dir(cfg), "api-key")
		}
		var err error
		if key, _, err = httpapi.LoadOrCreateKey(*keyFile); err != nil {
			return err
		}
	}

	m, err := ef.load(0)
	if err != nil {
		return err
	}
	defer m.Close()
	comp := complete.New(m, complete.Options{CacheBudget: int64(*cacheMB) << 20})
	defer comp.Close()
	info := m.Info()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "laya: "+format+"\n", a...) }
	srv := server.New(comp, server.Options{Logf: logf})

	// Both listeners first, so that a busy port leaves no socket behind and nothing is
	// announced that is not served.
	var ol net.Listener
	if *openai != "" {
		if ol, err = net.Listen("tcp", *openai); err != nil {
			return fmt.Errorf("--openai-addr: %w", err)
		}
	}
	l, err := server.Listen(path)
	if err != nil {
		if ol != nil {
			ol.Close()
		}
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(l) }()
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "laya: serving %s (%s, %s backend, %d positions) on %s\n", info.Path, info.Arch, info.Backend, info.Context, path)
	if ol != nil {
		hs := httpapi.New(comp, httpapi.Options{Key: key, ModelName: filepath.Base(info.Path), ContextLength: info.Context, Logf: logf})
		go func() { errc <- hs.Serve(ol) }()
		defer hs.Close()
		fmt.Fprintf(os.Stderr, "laya: HTTP endpoint on http://%s (OpenAI /v1/completions, llama.cpp /infill, Ollama /api/generate)\n", ol.Addr())
		if key != "" {
			fmt.Fprintf(os.Stderr, "laya: API key (send as \"Authorization: Bearer KEY\"; stored in %s): %s\n", *keyFile, key)
		} else {
			fmt.Fprintf(os.Stderr, "laya: no API key: every local user can use the HTTP endpoint\n")
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
		return nil
	case err := <-errc:
		if errors.Is(err, server.ErrClosed) {
			return nil
		}
		return err
	}
}

// checkLoopback refuses an --openai-addr that would be reachable from other machines.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--openai-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--openai-addr %q: only loopback addresses (127.0.0.1, ::1) are allowed", addr)
	}
	return nil
}
