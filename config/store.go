package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/layaapp/laya/internal/fsutil"
)

// ErrBadFile is returned by Store.Save while the file on disk is one Load rejected: writing
// would destroy the user's edits. SaveExplicit, for a save the user asked for, moves it aside.
var ErrBadFile = errors.New("config: the config file on disk has errors; not overwriting it")

// Store is the config file and what Laya knows about it. Its methods are safe for concurrent use.
type Store struct {
	path string
	mu   sync.Mutex
	bad  bool
}

// NewStore returns a store for the file at path (see Path).
func NewStore(path string) *Store { return &Store{path: path} }

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// maxFileBytes bounds config.toml, a few hundred bytes in practice.
const maxFileBytes = 1 << 20

// Load reads the file. A missing file is the defaults, silently. An unreadable or invalid
// file also yields the defaults, together with an error to show the user; the file is then
// left untouched and Save refuses to overwrite it.
func (s *Store) Load() (Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bad = false
	data, err := fsutil.ReadFileLimit(s.path, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		s.bad = true
		return Default(), fmt.Errorf("config: %w; using defaults", err)
	}
	c, err := Parse(data)
	if err != nil {
		s.bad = true
		return Default(), fmt.Errorf("%s: %w; %s", s.path, err, badFileAdvice())
	}
	return c, nil
}

// badFileAdvice says what happens to a rejected file: only the Mac app has a Preferences window
// whose save replaces it (keeping it as config.toml.bad).
func badFileAdvice() string {
	if runtime.GOOS == "darwin" {
		return "using defaults until Preferences are saved"
	}
	return "using defaults; fix the file or delete it"
}

// Bad reports whether the file on disk was rejected by the last Load.
func (s *Store) Bad() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bad
}

// Save validates c and writes it, unless the file on disk is bad (ErrBadFile).
func (s *Store) Save(c Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad {
		return ErrBadFile
	}
	return s.write(c)
}

// SaveExplicit is Save for a save the user asked for: a bad file on disk is first renamed to
// config.toml.bad, so it is kept, not overwritten.
func (s *Store) SaveExplicit(c Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if s.bad {
		if err := os.Rename(s.path, s.path+".bad"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config: keep bad file: %w", err)
		}
		s.bad = false
	}
	return s.write(c)
}

func (s *Store) write(c Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	data, err := Marshal(c)
	if err != nil {
		return err
	}
	if err := writeAtomic(s.path, data); err != nil {
		return fmt.Errorf("config: save %s: %w", s.path, err)
	}
	return nil
}

// writeAtomic replaces path with data so that a crash leaves either the old or the new file:
// write a temporary file in the same directory, fsync it, rename it over path, fsync the
// directory so the rename itself is durable.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".config-*.toml")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
