package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxKeyFile bounds what is read of a key file; a key is 69 bytes.
const maxKeyFile = 4 << 10

// LoadOrCreateKey returns the API key stored at path, creating it (0600, in a 0700 directory
// when that is missing) with a new random key the first time. A key file that other users can
// read is refused: its key would let them use the endpoint.
func LoadOrCreateKey(path string) (key string, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("httpapi: API key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		var b [32]byte
		rand.Read(b[:])
		key = "laya-" + hex.EncodeToString(b[:])
		_, werr := f.WriteString(key + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return "", false, fmt.Errorf("httpapi: writing the API key: %w", werr)
		}
		return key, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("httpapi: API key: %w", err)
	}
	f, err = os.Open(path)
	if err != nil {
		return "", false, fmt.Errorf("httpapi: API key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("httpapi: API key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("httpapi: API key file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("httpapi: API key file %s is readable by other users (mode %v): chmod 600 it, or delete it for a new key", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", false, fmt.Errorf("httpapi: API key: %w", err)
	}
	if len(b) > maxKeyFile {
		return "", false, fmt.Errorf("httpapi: API key file %s is larger than %d bytes", path, maxKeyFile)
	}
	key = strings.TrimSpace(string(b))
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return "", false, fmt.Errorf("httpapi: API key file %s must hold one key on one line; delete it for a new key", path)
	}
	return key, false, nil
}
