//go:build darwin

// Command Laya is the macOS menu-bar app: a global hotkey (or a pause in typing) completes the
// text at the caret in any app with the local model, shown as ghost text that Tab accepts.
// The behaviour lives in package controller; these files adapt it to AppKit, Accessibility and
// Carbon.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/progrium/macdriver/cocoa"
	"github.com/progrium/macdriver/objc"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/app/menu"
	"github.com/layaapp/laya/app/prefs"
	"github.com/layaapp/laya/app/stats"
	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/hotkey"
	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/models/download"
)

func main() {
	log.SetPrefix("laya: ")
	a := newApp()
	cocoa.TerminateAfterWindowsClose = false
	nsapp := cocoa.NSApp_WithDidLaunch(func(objc.Object) { a.didLaunch() })
	nsapp.SetActivationPolicy(cocoa.NSApplicationActivationPolicyAccessory) // no Dock icon
	nsapp.Run()
}

// app connects the controller, the engine and the UI. Fields under mu are shared with
// goroutines; the UI objects are touched on the main thread only.
type app struct {
	store *config.Store
	stats *stats.Stats
	eng   *engineHost
	ctl   *controller.Controller

	mu        sync.Mutex
	cfg       config.Config
	state     menu.State
	downloads map[string]context.CancelFunc
	catalog   *models.Catalog
	hk        *hotkey.Hotkey
	hkChanged chan struct{}

	bar     *statusBar
	prefs   *prefsWindow
	onboard *onboardingWindow
}

func newApp() *app {
	a := &app{downloads: map[string]context.CancelFunc{}, hkChanged: make(chan struct{}, 1)}
	path, err := config.Path()
	if err != nil {
		log.Fatal(err)
	}
	a.store = config.NewStore(path)
	if a.stats, err = stats.Open(filepath.Join(filepath.Dir(path), "stats.json"), time.Now()); err != nil {
		log.Print(err)
	}
	cfg, warn := a.store.Load()
	if warn != nil {
		log.Print(warn)
		a.state.Warning = "Preferences file has errors; defaults in use. Open Preferences…"
	}
	a.cfg = cfg
	a.eng = newEngineHost(idleAfter(cfg), func(unloaded bool) {
		a.setState(func(s *menu.State) { s.Unloaded = unloaded })
	})
	a.state.Enabled, a.state.Mode, a.state.Current = cfg.Enabled, cfg.Mode, cfg.Model
	if a.catalog, err = models.DefaultCatalog(); err != nil {
		log.Printf("model catalog: %v", err)
	} else {
		a.state.Offers = menu.Offers(a.catalog)
	}
	return a
}

// didLaunch runs on the main thread inside applicationDidFinishLaunching. Anything that waits
// for the main thread (hotkey registration, model loading) is started on goroutines from here.
func (a *app) didLaunch() {
	installMainMenu()
	keepAwake(a.config().Enabled)
	a.ctl = controller.New(controller.Deps{
		Fields: axFields{}, Overlay: newOverlay(), Keys: keyboard{}, Engine: a.eng, Observe: a.observe,
	}, a.config())
	a.bar = newStatusBar(resourcePath("StatusIcon.png"), a.menuAction)
	a.prefs = newPrefsWindow(a.savePrefs)
	a.onboard = newOnboardingWindow(a.menuAction)
	observeActivation()
	observeInputSource()
	observeMemoryPressure(a.eng.idle)
	if axTrusted(false) && startTap(a.ctl) {
		a.setState(func(s *menu.State) { s.Trusted = true })
	} else {
		a.onboard.show()
		go a.waitForTrust()
	}
	go a.start()
}

func (a *app) start() {
	go func() {
		// Statistics reach the disk within a minute, not on every suggestion.
		for range time.Tick(time.Minute) {
			a.saveStats()
		}
	}()
	a.rescan()
	a.setHotkey(a.config().HotkeySpec())
	go a.hotkeyLoop()
	go func() {
		if err := a.eng.serve(); err != nil {
			log.Printf("completion server: %v", err)
		}
	}()
	a.loadModel(a.config().Model)
}

func (a *app) config() config.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}

func (a *app) setState(f func(*menu.State)) {
	a.mu.Lock()
	f(&a.state)
	a.mu.Unlock()
	a.refreshMenu()
}

// refreshMenu rebuilds the menu from the current state, on the main thread.
func (a *app) refreshMenu() {
	a.mu.Lock()
	s := a.state
	s.Stats = a.stats.Lines(3)
	s.Downloads = make(map[string]menu.Transfer, len(a.state.Downloads))
	for k, v := range a.state.Downloads {
		s.Downloads[k] = v
	}
	a.mu.Unlock()
	onMain(func() {
		a.bar.render(menu.Build(s))
		a.onboard.setOffer(menu.FirstRun(s))
	})
}

// rescan lists the bundled model and those in the models directory: at launch, after a
// download and when the directory changes.
func (a *app) rescan() {
	var found []menu.Installed
	if _, err := models.Default(); err == nil {
		found = append(found, menu.Installed{Name: "laya-code (built in)", Path: ""})
	}
	if dir, err := a.config().ModelsDir(); err != nil {
		log.Print(err)
	} else {
		found = append(found, menu.Scan(dir, models.OpenProbe)...)
	}
	a.setState(func(s *menu.State) { s.Installed = found })
}

// observe receives controller events with the controller's lock held: no calls back into it.
func (a *app) observe(e controller.Event) {
	a.stats.Record(e)
	switch e.Kind {
	case controller.Shown:
		a.setState(func(s *menu.State) { s.LastLatency = e.Latency })
	case controller.Accepted, controller.AcceptedWord:
		a.refreshMenu()
	case controller.Failed:
		log.Printf("suggestion in %s failed: %v", e.App, e.Err)
	}
}

func (a *app) waitForTrust() {
	for !axTrusted(false) {
		time.Sleep(time.Second)
	}
	onMain(func() {
		if !startTap(a.ctl) {
			log.Print("event tap refused although Accessibility is granted")
			return
		}
		a.onboard.close()
		a.setState(func(s *menu.State) { s.Trusted = true })
	})
}

// setHotkey replaces the registered hotkey. Not on the main thread: Register waits for it.
func (a *app) setHotkey(sp hotkey.Spec) {
	h := hotkey.New(sp)
	if err := h.Register(); err != nil {
		log.Print(err)
		a.setState(func(s *menu.State) {
			s.Warning = "Hotkey " + sp.String() + " unavailable; choose another in Preferences…"
		})
		return
	}
	a.mu.Lock()
	old := a.hk
	a.hk = h
	a.mu.Unlock()
	if old != nil {
		old.Unregister()
	}
	select {
	case a.hkChanged <- struct{}{}:
	default:
	}
}

func (a *app) hotkeyLoop() {
	for {
		a.mu.Lock()
		h := a.hk
		a.mu.Unlock()
		var presses <-chan hotkey.Event
		if h != nil {
			presses = h.Keydown()
		}
		select {
		case <-presses:
			a.ctl.Hotkey()
		case <-a.hkChanged:
		}
	}
}

func (a *app) loadModel(path string) {
	name := "laya-code"
	if path != "" {
		name = filepath.Base(path)
	}
	a.setState(func(s *menu.State) { s.Model, s.Loading, s.LoadErr, s.Current = name, true, "", path })
	info, err := a.eng.Load(path)
	if st := info.SelfTest; err == nil && st != nil && !st.Passed {
		// The GPU backend's open error or self-test failure, which the status line flags.
		log.Printf("%s backend not used, the model runs on %s: %s", st.Backend, info.Backend, st.Reason)
	}
	a.setState(func(s *menu.State) {
		s.Loading = false
		if err != nil {
			s.LoadErr = err.Error()
			return
		}
		s.Backend, s.GPUOff = info.Backend, info.SelfTest != nil && !info.SelfTest.Passed
	})
}

// menuAction handles a click; main thread.
func (a *app) menuAction(it menu.Item) {
	switch it.Action {
	case menu.ToggleEnabled:
		a.changeConfig(func(c *config.Config) { c.Enabled = !c.Enabled })
	case menu.ModeHotkey:
		a.changeConfig(func(c *config.Config) { c.Mode = config.ModeHotkey })
	case menu.ModeAutomatic:
		a.changeConfig(func(c *config.Config) { c.Mode = config.ModeAutomatic })
	case menu.UseModel:
		a.changeConfig(func(c *config.Config) { c.Model = it.Arg })
		go a.loadModel(it.Arg)
	case menu.Download:
		a.startDownload(it.Arg)
	case menu.CancelDownload:
		a.mu.Lock()
		if cancel := a.downloads[it.Arg]; cancel != nil {
			cancel()
		}
		a.mu.Unlock()
	case menu.Preferences:
		a.mu.Lock()
		cfg, warn := a.cfg, a.state.Warning
		a.mu.Unlock()
		cfg.LaunchAtLogin = prefs.LoginShown(loginStatus())
		a.prefs.show(cfg, warn)
	case menu.Onboarding:
		a.onboard.show()
	case menu.ResetStats:
		a.stats.Reset(time.Now())
		go a.saveStats()
		a.refreshMenu()
	case menu.CopyDiagnostics:
		go a.copyDiagnostics()
	case menu.About:
		cocoa.NSApp().ActivateIgnoringOtherApps(true)
		cocoa.NSApp().Send("orderFrontStandardAboutPanel:", cocoa.NSApp())
	case menu.Quit:
		a.saveStats()
		cocoa.NSApp().Terminate()
	}
}

// changeConfig applies a change made from the menu. It is saved unless the file on disk was
// rejected at launch; that file is only replaced by an explicit save in Preferences.
func (a *app) changeConfig(f func(*config.Config)) {
	a.mu.Lock()
	f(&a.cfg)
	cfg := a.cfg
	a.state.Enabled, a.state.Mode = cfg.Enabled, cfg.Mode
	a.mu.Unlock()
	a.ctl.SetConfig(cfg)
	keepAwake(cfg.Enabled)
	a.eng.idle.SetAfter(idleAfter(cfg))
	if err := a.store.Save(cfg); err != nil && !errors.Is(err, config.ErrBadFile) {
		log.Print(err)
	}
	a.refreshMenu()
}

// savePrefs is the Preferences window's Save: validated by prefs.Form, saved explicitly; main
// thread. A login-item failure is shown in the menu and never keeps the rest from being saved.
func (a *app) savePrefs(f prefs.Form) error {
	old := a.config()
	cfg, err := f.Apply(old)
	if err != nil {
		return err
	}
	warning := ""
	if cfg.LaunchAtLogin != prefs.LoginShown(loginStatus()) {
		if err := setLaunchAtLogin(cfg.LaunchAtLogin); err != nil {
			log.Print(err)
			warning = err.Error()
		}
	}
	if err := a.store.SaveExplicit(cfg); err != nil {
		return err
	}
	a.mu.Lock()
	a.cfg = cfg
	a.state.Enabled, a.state.Mode, a.state.Warning = cfg.Enabled, cfg.Mode, warning
	a.mu.Unlock()
	a.ctl.SetConfig(cfg)
	keepAwake(cfg.Enabled)
	a.eng.idle.SetAfter(idleAfter(cfg))
	if cfg.Hotkey != old.Hotkey {
		go a.setHotkey(cfg.HotkeySpec())
	}
	go a.rescan()
	return nil
}

func (a *app) startDownload(id string) {
	if a.catalog == nil {
		return
	}
	e, ok := a.catalog.Lookup(id)
	if !ok {
		return
	}
	dir, err := a.config().ModelsDir()
	if err != nil {
		log.Print(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.mu.Lock()
	if a.downloads[id] != nil {
		a.mu.Unlock()
		cancel()
		return
	}
	a.downloads[id] = cancel
	if a.state.Downloads == nil {
		a.state.Downloads = map[string]menu.Transfer{}
	}
	a.state.Downloads[id] = menu.Transfer{}
	a.mu.Unlock()
	a.refreshMenu()

	go func() {
		defer cancel()
		var last time.Time
		client := download.New(download.Options{Progress: func(p download.Progress) {
			// Rebuilding the menu ten times a second is wasteful; twice is plenty.
			if time.Since(last) < 500*time.Millisecond {
				return
			}
			last = time.Now()
			a.setState(func(s *menu.State) { s.Downloads[id] = menu.Transfer{Fraction: p.Fraction()} })
		}})
		_, err := client.Pull(ctx, download.Request{Repo: e.Repo, Revision: e.Revision, Files: e.Files, Dest: filepath.Join(dir, e.ID)})
		a.mu.Lock()
		delete(a.downloads, id)
		a.mu.Unlock()
		a.setState(func(s *menu.State) {
			switch {
			case errors.Is(err, context.Canceled):
				delete(s.Downloads, id)
			case err != nil:
				s.Downloads[id] = menu.Transfer{Err: fmt.Sprint(err)}
			default:
				delete(s.Downloads, id)
			}
		})
		if err == nil {
			a.rescan()
		}
	}()
}

func (a *app) saveStats() {
	if err := a.stats.Save(); err != nil {
		log.Print(err)
	}
}

// idleAfter is how long the model stays loaded without requests; 0 is for ever.
func idleAfter(c config.Config) time.Duration {
	return time.Duration(c.IdleUnloadMinutes) * time.Minute
}

// resourcePath finds a file in the app bundle's Contents/Resources.
func resourcePath(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return name
	}
	return filepath.Join(filepath.Dir(exe), "..", "Resources", name)
}
