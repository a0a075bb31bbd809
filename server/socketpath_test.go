package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongSocketPath: a path over sockaddr_un's size is refused by name and size, by Listen and
// Dial alike, instead of the kernel's "bind: invalid argument".
func TestLongSocketPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("d", 120), "laya.sock")
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "Unix sockets allow at most") {
		t.Errorf("Listen: %v", err)
	}
	if _, err := Dial(context.Background(), path); err == nil || !strings.Contains(err.Error(), "Unix sockets allow at most") {
		t.Errorf("Dial: %v", err)
	}
	short := filepath.Join(t.TempDir(), "s.sock")
	if len(short) > 100 {
		t.Skip("temp dir too long")
	}
	if err := CheckSocketPath(short); err != nil {
		t.Errorf("%s: %v", short, err)
	}
}
