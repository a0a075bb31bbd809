package main

import "testing"

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
