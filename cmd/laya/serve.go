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
	"github.com/layaapp/laya/server"
)

func init() {
	register("serve", "keep the model warm and serve completions on the local socket", runServe)
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ef := addEngineFlags(fs, defaultBackendUsage)
	socket := fs.String("socket", "", "Unix socket to listen on (default: $LAYA_SOCKET or the user's application-support directory)")
	openai := fs.String("openai-addr", "", "also serve OpenAI-style POST /v1/completions on this loopback address, e.g. 127.0.0.1:8642 (off by default)")
	cacheMB := fs.Int("cache-mb", 512, "memory for the KV caches of all clients, in MiB")
	if err := fs.Parse(args); err != nil {
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
		if path, err = server.DefaultSocketPath(); err != nil {
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
	srv := server.New(comp, server.Options{
		ModelName: filepath.Base(info.Path),
		Logf:      func(format string, a ...any) { fmt.Fprintf(os.Stderr, "laya: "+format+"\n", a...) },
	})

	l, err := server.Listen(path)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(l) }()
	fmt.Fprintf(os.Stderr, "laya: serving %s (%s, %s backend, %d positions) on %s\n", info.Path, info.Arch, info.Backend, info.Context, path)
	if *openai != "" {
		ol, err := net.Listen("tcp", *openai)
		if err != nil {
			srv.Close()
			return fmt.Errorf("OpenAI endpoint: %w", err)
		}
		go func() { errc <- srv.ServeOpenAI(ol) }()
		fmt.Fprintf(os.Stderr, "laya: OpenAI-style endpoint on http://%s/v1/completions\n", ol.Addr())
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
		srv.Close()
		return nil
	case err := <-errc:
		srv.Close()
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
