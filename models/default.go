package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// bundled is where the repository keeps the default model, relative to its root.
var bundled = filepath.Join("assets", "models", "laya-code")

// Default returns the model to run when none is named: $LAYA_MODEL when set, else Bundled's.
func Default() (string, error) {
	if p := os.Getenv("LAYA_MODEL"); p != "" {
		return p, nil
	}
	return Bundled()
}

// Bundled finds the bundled model: assets/models/laya-code in the working directory or
// one of its parents (a checkout), share/laya/models/laya-code beside the executable's bin
// directory (make install), an app bundle's Contents/Resources/models/laya-code next to
// Contents/MacOS, or assets/models/laya-code in the executable's directory or its parents.
func Bundled() (string, error) {
	var tried []string // where the search started, for the error
	look := func(dir string) (string, bool) {
		// config.json marks a model directory, so a stray empty folder is not taken for one.
		if st, err := os.Stat(filepath.Join(dir, "config.json")); err == nil && st.Mode().IsRegular() {
			return dir, true
		}
		return "", false
	}
	upward := func(start string) (string, bool) {
		tried = append(tried, start+" and its parents")
		for d := start; ; d = filepath.Dir(d) {
			if p, ok := look(filepath.Join(d, bundled)); ok {
				return p, true
			}
			if filepath.Dir(d) == d {
				return "", false
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if p, ok := upward(wd); ok {
			return p, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir := filepath.Dir(exe)
		for _, p := range []string{
			filepath.Join(dir, "..", "share", "laya", "models", "laya-code"),
			filepath.Join(dir, "..", "Resources", "models", "laya-code"),
		} {
			p = filepath.Clean(p)
			tried = append(tried, p)
			if _, ok := look(p); ok {
				return p, nil
			}
		}
		if p, ok := upward(dir); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("models: no model given and no bundled model found: set LAYA_MODEL or pass a path (looked for %s in %s)", bundled, strings.Join(tried, "; "))
}
