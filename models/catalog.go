// Package models knows which models Laya offers and which ones a user already has: the curated
// catalog (assets/catalog.toml), Laya's own models directory, and the models other tools keep on
// disk (the HuggingFace cache, LM Studio, Ollama).
package models

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/layaapp/laya/assets"
	"github.com/layaapp/laya/models/internal/hub"
)

// Entry is one curated model of the catalog.
type Entry struct {
	ID       string   `toml:"id" json:"id"`
	Name     string   `toml:"name" json:"name"`
	Repo     string   `toml:"repo" json:"repo"`         // HuggingFace hub repository, "org/name"
	Revision string   `toml:"revision" json:"revision"` // branch, tag or commit; "main" when empty in the file
	Format   string   `toml:"format" json:"format"`     // "mlx", "safetensors" or "gguf"
	Files    []string `toml:"files" json:"files"`       // gguf: the one file; directories: empty (chosen from the listing)
	Arch     string   `toml:"arch" json:"arch"`
	Params   string   `toml:"params" json:"params"`
	Quant    string   `toml:"quant" json:"quant"`
	SizeMB   int      `toml:"size_mb" json:"size_mb"` // approximate download size
	License  string   `toml:"license" json:"license"`
	GoodFor  string   `toml:"good_for" json:"good_for"`
	FIM      bool     `toml:"fim" json:"fim"` // the tokenizer has fill-in-the-middle tokens
	Speed    []Speed  `toml:"speed" json:"speed"`
	// Recommended marks the prose model a first run offers when only the bundled code model is
	// installed (the smallest good base model); at most one entry has it.
	Recommended bool `toml:"recommended" json:"recommended"`
	// Unverified says which of the repository and file names could not be checked against the
	// hub when the entry was written; empty when both were seen there.
	Unverified string `toml:"unverified" json:"unverified,omitempty"`
}

// Speed is a decode speed on one kind of Mac. Measured is false for our estimates.
type Speed struct {
	Mac          string  `toml:"mac" json:"mac"`
	TokensPerSec float64 `toml:"tokens_per_sec" json:"tokens_per_sec"`
	Measured     bool    `toml:"measured" json:"measured"`
}

// String formats s for people, saying when the number is an estimate.
func (s Speed) String() string {
	kind := "estimate, not measured"
	if s.Measured {
		kind = "measured"
	}
	return fmt.Sprintf("%s: ~%.0f tokens/s (%s)", s.Mac, s.TokensPerSec, kind)
}

// Catalog is the parsed, validated list of curated models.
type Catalog struct {
	Models []Entry
}

// Formats a catalog entry may have.
var formats = map[string]bool{"mlx": true, "safetensors": true, "gguf": true}

// ParseCatalog parses and validates catalog TOML. Unknown keys are errors, so a typo in the file
// cannot silently drop a field.
func ParseCatalog(data []byte) (*Catalog, error) {
	var doc struct {
		Model []Entry `toml:"model" json:"model"`
	}
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		return nil, fmt.Errorf("models: catalog: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("models: catalog: unknown keys %s", strings.Join(keys, ", "))
	}
	if len(doc.Model) == 0 {
		return nil, errors.New("models: catalog: no [[model]] entries")
	}
	seen := map[string]bool{}
	recommended := ""
	for i := range doc.Model {
		e := &doc.Model[i]
		if e.Revision == "" {
			e.Revision = "main"
		}
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("models: catalog entry %d (%q): %w", i+1, e.ID, err)
		}
		if seen[e.ID] {
			return nil, fmt.Errorf("models: catalog: duplicate id %q", e.ID)
		}
		seen[e.ID] = true
		if e.Recommended {
			if recommended != "" {
				return nil, fmt.Errorf("models: catalog: both %q and %q are recommended", recommended, e.ID)
			}
			recommended = e.ID
		}
	}
	return &Catalog{Models: doc.Model}, nil
}

// Recommended returns the prose model a first run offers, if the catalog names one.
func (c *Catalog) Recommended() (Entry, bool) {
	for _, e := range c.Models {
		if e.Recommended {
			return e, true
		}
	}
	return Entry{}, false
}

func (e *Entry) validate() error {
	switch {
	case e.ID == "":
		return errors.New("missing id")
	case strings.ContainsAny(e.ID, "/ \t"):
		return errors.New("id must not contain '/' or spaces")
	case e.Name == "":
		return errors.New("missing name")
	case e.License == "":
		return errors.New("missing license")
	case e.GoodFor == "":
		return errors.New("missing good_for")
	case e.SizeMB <= 0:
		return errors.New("size_mb must be positive")
	case !formats[e.Format]:
		return fmt.Errorf("format %q is not mlx, safetensors or gguf", e.Format)
	}
	if err := hub.Repo(e.Repo); err != nil {
		return err
	}
	if e.Format == "gguf" && (len(e.Files) != 1 || !strings.HasSuffix(e.Files[0], ".gguf")) {
		return errors.New("a gguf entry names exactly one .gguf file in files")
	}
	for _, f := range e.Files {
		if !hub.File(f) {
			return fmt.Errorf("file %q is not a plain relative path", f)
		}
	}
	for _, s := range e.Speed {
		if s.Mac == "" || s.TokensPerSec <= 0 {
			return errors.New("every speed needs a mac and a positive tokens_per_sec")
		}
	}
	return nil
}

// DefaultCatalog parses the catalog compiled into the binary.
func DefaultCatalog() (*Catalog, error) {
	return ParseCatalog(assets.Catalog)
}

// Lookup finds an entry by its id or by its hub repository (case-insensitive, as the hub is).
func (c *Catalog) Lookup(idOrRepo string) (Entry, bool) {
	for _, e := range c.Models {
		if strings.EqualFold(e.ID, idOrRepo) || strings.EqualFold(e.Repo, idOrRepo) {
			return e, true
		}
	}
	return Entry{}, false
}
