// Package menu decides what the status-bar menu says and offers, from the app's state, as plain
// data; the darwin adapter only renders the items into an NSMenu and routes clicks back.
package menu

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/layaapp/laya/config"
)

// Action is what clicking an item does.
type Action int

// Actions. Arg carries the model for UseModel, Download and CancelDownload.
const (
	None Action = iota
	ToggleEnabled
	ModeHotkey
	ModeAutomatic
	UseModel
	Download
	CancelDownload
	Preferences
	Onboarding      // explains and requests the Accessibility permission
	ResetStats      // forgets the local statistics
	CopyDiagnostics // puts laya doctor's report on the pasteboard
	About
	Quit
)

// Item is one menu entry; a Separator ignores the other fields.
type Item struct {
	Title     string
	Action    Action
	Arg       string
	Checked   bool
	Enabled   bool
	Separator bool
	Key       string // key equivalent, e.g. "q" for ⌘Q
	Submenu   []Item
}

// Installed is a model on disk.
type Installed struct {
	Name string
	Path string // what config.Config.Model holds when it is selected
}

// Offer is a catalog model that can be downloaded.
type Offer struct {
	ID     string
	Name   string
	SizeMB int
	// Recommended is the catalog's recommended prose model, offered first while the user has
	// no prose model (see Recommended).
	Recommended bool
	// Code marks a model for code: installing it still leaves the user without a prose model.
	Code bool
}

// Transfer is the state of one model download.
type Transfer struct {
	Fraction float64
	Err      string // non-empty once it failed
}

// State is everything the menu shows.
type State struct {
	Model       string // display name of the loaded (or loading) model
	Backend     string
	GPUOff      bool // the GPU failed its self-test on this model, which runs on the CPU
	Loading     bool
	LoadErr     string
	Unloaded    bool          // released while idle; the next suggestion loads it again
	LastLatency time.Duration // 0 until a suggestion was shown
	Enabled     bool
	Mode        string // config.ModeHotkey or config.ModeAutomatic
	Trusted     bool   // the Accessibility permission is granted
	Warning     string // e.g. the config file was rejected
	Current     string // Path of the selected model; "" is the bundled default
	Installed   []Installed
	Offers      []Offer
	Downloads   map[string]Transfer // by Offer.ID
	Stats       []string            // the local statistics, a line each (stats.Stats.Lines)
}

// Status returns the first, informational line.
func Status(s State) string {
	switch {
	case s.LoadErr != "":
		return "Model failed to load: " + s.LoadErr
	case s.Loading:
		return "Loading " + s.Model + "…"
	case s.Unloaded:
		return s.Model + " unloaded while idle · the next suggestion loads it"
	}
	backend := s.Backend
	if s.GPUOff {
		backend += " (GPU failed its self-test)"
	}
	parts := []string{s.Model, backend}
	if s.LastLatency > 0 {
		parts = append(parts, fmt.Sprintf("last %d ms", s.LastLatency.Milliseconds()))
	}
	return strings.Join(parts, " · ")
}

// Build returns the menu for s.
func Build(s State) []Item {
	var items []Item
	items = append(items, Item{Title: Status(s)})
	if !s.Trusted {
		items = append(items, Item{Title: "⚠︎ Allow Accessibility access…", Action: Onboarding, Enabled: true})
	}
	if s.Warning != "" {
		items = append(items, Item{Title: "⚠︎ " + s.Warning, Action: Preferences, Enabled: true})
	}
	toggle := "Disable Suggestions"
	if !s.Enabled {
		toggle = "Enable Suggestions"
	}
	items = append(items,
		Item{Separator: true},
		Item{Title: toggle, Action: ToggleEnabled, Enabled: true},
		Item{Title: "Mode", Enabled: true, Submenu: []Item{
			{Title: "Hotkey", Action: ModeHotkey, Enabled: true, Checked: s.Mode == config.ModeHotkey},
			{Title: "Automatic (after a pause)", Action: ModeAutomatic, Enabled: true, Checked: s.Mode == config.ModeAutomatic},
		}},
		Item{Title: "Models", Enabled: true, Submenu: modelItems(s)},
		Item{Title: "Statistics", Enabled: true, Submenu: statsItems(s)},
		Item{Separator: true},
		Item{Title: "Preferences…", Action: Preferences, Enabled: true, Key: ","},
		Item{Title: "Copy Diagnostics", Action: CopyDiagnostics, Enabled: true},
		Item{Title: "About Laya", Action: About, Enabled: true},
		Item{Title: "Quit Laya", Action: Quit, Enabled: true, Key: "q"},
	)
	return items
}

// statsItems lists the statistics, which stay on this Mac, and the item that resets them.
func statsItems(s State) []Item {
	var items []Item
	for _, l := range s.Stats {
		items = append(items, Item{Title: l})
	}
	if len(items) == 0 {
		items = append(items, Item{Title: "No suggestions yet"})
	}
	return append(items, Item{Separator: true}, Item{Title: "Reset Statistics", Action: ResetStats, Enabled: true})
}

func modelItems(s State) []Item {
	var items []Item
	for _, m := range s.Installed {
		items = append(items, Item{Title: m.Name, Action: UseModel, Arg: m.Path, Enabled: !s.Loading, Checked: m.Path == s.Current})
	}
	installed := installedOffers(s)
	rec, recommend := Recommended(s)
	var offers []Item
	for _, o := range s.Offers {
		if installed[o.ID] || (recommend && o.ID == rec.ID) {
			continue
		}
		offers = append(offers, offerItem(s, o, fmt.Sprintf("Download %s (%s)…", o.Name, sizeText(o.SizeMB))))
	}
	sort.SliceStable(offers, func(i, j int) bool { return offers[i].Title < offers[j].Title })
	if recommend {
		// First, so that a first run sees it before the rest of the catalog.
		offers = append([]Item{offerItem(s, rec, fmt.Sprintf("Download %s (%s) — recommended for prose", rec.Name, sizeText(rec.SizeMB)))}, offers...)
	}
	if len(items) > 0 && len(offers) > 0 {
		items = append(items, Item{Separator: true})
	}
	if len(items) == 0 && len(offers) == 0 {
		return []Item{{Title: "No models found"}}
	}
	return append(items, offers...)
}

// offerItem is o's item: title while no download of o runs, else the download's progress or
// failure. Its ID is the same in every state but the running one, whose click cancels.
func offerItem(s State, o Offer, title string) Item {
	d, active := s.Downloads[o.ID]
	switch {
	case active && d.Err != "":
		return Item{Title: fmt.Sprintf("Download %s failed (%s) — Retry", o.Name, d.Err), Action: Download, Arg: o.ID, Enabled: true}
	case active:
		return Item{Title: fmt.Sprintf("Downloading %s… %d%% — Cancel", o.Name, int(d.Fraction*100)), Action: CancelDownload, Arg: o.ID, Enabled: true}
	}
	return Item{Title: title, Action: Download, Arg: o.ID, Enabled: true}
}

// installedOffers returns the IDs of the offers already installed.
func installedOffers(s State) map[string]bool {
	ids := map[string]bool{}
	for _, m := range s.Installed {
		if o, ok := offerOf(s.Offers, m); ok {
			ids[o.ID] = true
		}
	}
	return ids
}

// offerOf returns the offer that installed model m came from, if any.
func offerOf(offers []Offer, m Installed) (Offer, bool) {
	// A GGUF model is named "<dir>/<file>", and a catalog entry installs into the directory
	// its ID names.
	dir, _, _ := strings.Cut(m.Name, "/")
	for _, o := range offers {
		if o.ID == m.Name || o.ID == dir || o.Name == m.Name {
			return o, true
		}
	}
	return Offer{}, false
}

func sizeText(mb int) string {
	if mb >= 1024 {
		return fmt.Sprintf("%.1f GB", float64(mb)/1024)
	}
	return fmt.Sprintf("%d MB", mb)
}
