//go:build darwin

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/layaapp/laya/app/completion"
	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/app/pin"
	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/engine"
	_ "github.com/layaapp/laya/metal" // registers the "metal" backend
	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/server"
)

var errNotLoaded = errors.New("the model is still loading")

// engineHost keeps one model warm. The app's requests run on a dedicated OS thread with the
// user-interactive QoS class; the completion server's clients call the completer directly,
// and the model serializes forward passes across both.
type engineHost struct {
	jobs chan func()
	idle *controller.Idle
	// onUnload is told when the model was released (true) or loaded again (false).
	onUnload func(unloaded bool)

	mu       sync.Mutex
	model    *engine.Model
	comp     *complete.Completer
	pinned   *pin.Pinned
	path     string // the model loaded, or released while idle
	unloaded bool   // released while idle; the next request loads path again
}

func newEngineHost(idleAfter time.Duration, onUnload func(bool)) *engineHost {
	h := &engineHost{jobs: make(chan func()), onUnload: onUnload}
	h.idle = controller.NewIdle(nil, idleAfter, h.unload)
	go h.run()
	return h
}

// unload releases the model on the engine thread, after any request running there.
func (h *engineHost) unload() {
	h.do(context.Background(), func() {
		h.mu.Lock()
		comp, model, pinned := h.comp, h.model, h.pinned
		if comp == nil {
			h.mu.Unlock()
			return
		}
		h.comp, h.model, h.pinned = nil, nil, nil
		h.unloaded = true
		h.mu.Unlock()
		comp.Close()
		model.Close()
		pinned.Release()
		log.Print("model released while idle; the next request loads it again")
		h.onUnload(true)
	})
}

// ready returns the completer, loading the model again if it was released while idle.
func (h *engineHost) ready() (*complete.Completer, error) {
	if c := h.completer(); c != nil {
		h.idle.Used()
		return c, nil
	}
	h.mu.Lock()
	path, unloaded := h.path, h.unloaded
	h.mu.Unlock()
	if !unloaded {
		return nil, errNotLoaded
	}
	if _, err := h.Load(path); err != nil {
		return nil, err
	}
	if c := h.completer(); c != nil {
		return c, nil
	}
	return nil, errNotLoaded
}

func (h *engineHost) run() {
	if err := lockInteractiveThread(); err != nil {
		log.Printf("laya: %v", err)
	}
	for f := range h.jobs {
		f()
	}
}

// do runs f on the engine thread and waits, or gives up when ctx ends first.
func (h *engineHost) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case h.jobs <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// Load replaces the warm model with the one at path ("" = the bundled default).
func (h *engineHost) Load(path string) (engine.Info, error) {
	var info engine.Info
	var err error
	h.do(context.Background(), func() {
		var m *engine.Model
		if path == "" {
			if path, err = models.Default(); err != nil {
				return
			}
		}
		m, err = engine.Load(path, engine.Options{})
		if err != nil {
			return
		}
		info = m.Info()
		p, perr := pinFiles(info.Path)
		if perr != nil {
			log.Printf("laya: weights not locked in memory (not fatal): %v", perr)
		}
		h.mu.Lock()
		oldComp, oldModel, oldPin := h.comp, h.model, h.pinned
		h.model, h.comp, h.pinned = m, complete.New(m, complete.Options{}), p
		wasUnloaded := h.unloaded
		h.path, h.unloaded = path, false
		h.mu.Unlock()
		if oldComp != nil {
			oldComp.Close()
			oldModel.Close()
			oldPin.Release()
		}
		if wasUnloaded {
			h.onUnload(false)
		}
	})
	if err == nil {
		h.idle.Used()
	}
	if err != nil {
		return engine.Info{}, fmt.Errorf("load model: %w", err)
	}
	return info, nil
}

func pinFiles(path string) (*pin.Pinned, error) {
	files, err := pin.WeightFiles(path)
	if err != nil {
		return nil, err
	}
	return pin.Files(files)
}

func (h *engineHost) completer() *complete.Completer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.comp
}

// Complete is controller.Engine, on the engine thread.
func (h *engineHost) Complete(ctx context.Context, r controller.Request, onText func(string)) (string, error) {
	c, err := h.ready()
	if err != nil {
		return "", err
	}
	defer h.idle.Used()
	req, err := completion.Request(r)
	if err != nil {
		return "", err
	}
	var s complete.Suggestion
	if derr := h.do(ctx, func() { s, err = c.Complete(ctx, completion.Client, req, onText) }); derr != nil {
		return "", derr
	}
	return s.Text, err
}

// serverCompleter is server.Completer over whichever model is loaded now.
type serverCompleter struct{ h *engineHost }

func (s serverCompleter) Complete(ctx context.Context, client string, req complete.Request, onText func(string)) (complete.Suggestion, error) {
	c, err := s.h.ready()
	if err != nil {
		return complete.Suggestion{}, err
	}
	defer s.h.idle.Used()
	return c.Complete(ctx, client, req, onText)
}

// serve runs the completion server on the default Unix socket until the app quits.
func (h *engineHost) serve() error {
	path, err := config.SocketPath()
	if err != nil {
		return err
	}
	l, err := server.Listen(path)
	if err != nil {
		return err
	}
	return server.New(serverCompleter{h}, server.Options{Logf: log.Printf}).Serve(l)
}
