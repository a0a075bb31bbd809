package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/layaapp/laya/internal/fsutil"
)

// IndexFile is the name of the index a sharded checkpoint carries next to its shards.
const IndexFile = "model.safetensors.index.json"

// Set is the tensors of a model directory, possibly spread over several shards.
type Set struct {
	Files []*File
	// ByName finds each tensor in its shard.
	ByName map[string]*Tensor
}

// maxIndexBytes bounds IndexFile: a tensor name and a shard name per tensor, under 1 MB for the
// largest models.
const maxIndexBytes = 64 << 20

// OpenDir opens the safetensors files of a model directory: the shards IndexFile's weight_map
// names when the index exists, otherwise every *.safetensors file. A tensor in two files, or one the
// index places in a shard that lacks it, is an error.
func OpenDir(dir string) (*Set, error) {
	index, err := fsutil.ReadFileLimit(filepath.Join(dir, IndexFile), maxIndexBytes)
	switch {
	case err == nil:
		return openIndexed(dir, index)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("safetensors: %s: no *.safetensors files", dir)
	}
	sort.Strings(names)
	s := &Set{ByName: map[string]*Tensor{}}
	for _, p := range names {
		if err := s.add(p, nil); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func openIndexed(dir string, index []byte) (*Set, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", filepath.Join(dir, IndexFile), err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: empty weight_map", filepath.Join(dir, IndexFile))
	}
	shards := map[string][]string{}
	for name, shard := range idx.WeightMap {
		// The index is data from the download; it must not reach outside the model directory.
		if shard == "" || shard != filepath.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == ".." {
			return nil, fmt.Errorf("safetensors: %s: tensor %q: bad shard name %q", filepath.Join(dir, IndexFile), name, shard)
		}
		shards[shard] = append(shards[shard], name)
	}
	order := make([]string, 0, len(shards))
	for shard := range shards {
		order = append(order, shard)
	}
	sort.Strings(order)
	s := &Set{ByName: map[string]*Tensor{}}
	for _, shard := range order {
		if err := s.add(filepath.Join(dir, shard), shards[shard]); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// add opens the file at path and registers its tensors: all of them, or only want when not nil
// (each of which must be there).
func (s *Set) add(path string, want []string) error {
	f, err := Open(path)
	if err != nil {
		return err
	}
	s.Files = append(s.Files, f)
	if want == nil {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if _, dup := s.ByName[t.Name]; dup {
				return fmt.Errorf("safetensors: %s: tensor %q is also in another file", path, t.Name)
			}
			s.ByName[t.Name] = t
		}
		return nil
	}
	for _, name := range want {
		t, ok := f.Tensor(name)
		if !ok {
			return fmt.Errorf("safetensors: %s: tensor %q: listed in %s but not in the file", path, name, IndexFile)
		}
		s.ByName[name] = t
	}
	return nil
}

// Bytes is the total size of the files.
func (s *Set) Bytes() int64 {
	var n int64
	for _, f := range s.Files {
		if f.mm != nil {
			n += int64(len(f.mm.Data))
		}
	}
	return n
}

// Close unmaps every file.
func (s *Set) Close() error {
	var first error
	for _, f := range s.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
