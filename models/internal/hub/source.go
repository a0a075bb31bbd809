package hub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/layaapp/laya/internal/fsutil"
)

// SourceFile, in a model directory the downloader installed, records where the model came from,
// so discovery knows its repository whatever the directory is called.
const SourceFile = ".laya-source.json"

// Source is the content of SourceFile.
type Source struct {
	Repo   string `json:"repo"`
	Commit string `json:"commit"`
}

// WriteSource records s in dir.
func WriteSource(dir string, s Source) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SourceFile), append(data, '\n'), 0o644)
}

// maxSourceBytes bounds SourceFile, one small JSON object.
const maxSourceBytes = 1 << 20

// ReadSource reads dir's SourceFile; the error wraps fs.ErrNotExist when there is none.
func ReadSource(dir string) (Source, error) {
	var s Source
	data, err := fsutil.ReadFileLimit(filepath.Join(dir, SourceFile), maxSourceBytes)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SourceFile), err)
	}
	if err := Repo(s.Repo); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, SourceFile), err)
	}
	return s, nil
}
