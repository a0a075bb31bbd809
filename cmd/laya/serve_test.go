package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8642": true, "localhost:1": true, "[::1]:80": true, "127.0.0.2:1": true,
		"0.0.0.0:8642": false, ":8642": false, "192.168.1.2:1": false, "example.com:1": false, "127.0.0.1": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// A busy --openai-addr fails before anything is served: no socket file is left behind.
func TestServeBusyPortLeavesNoSocket(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	sock := filepath.Join(dir, "laya.sock")
	err = runServe([]string{"--model", "../../assets/models/laya-code", "--socket", sock,
		"--openai-addr", busy.Addr().String(), "--api-key-file", filepath.Join(dir, "key")})
	if err == nil || !strings.Contains(err.Error(), "--openai-addr") {
		t.Fatalf("runServe on a busy port: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file after the failure: %v", err)
	}
}
