// Package dialer dials TCP in every way the checker must catch, and a Unix socket, which is fine.
package dialer

import (
	"context"
	"net"
	"time"
)

// All dials.
func All(ctx context.Context, network string) {
	net.Dial("tcp", "example.com:80")
	net.DialTimeout("udp", "10.0.0.1:53", time.Second)
	(&net.Dialer{}).DialContext(ctx, "tcp4", "example.com:443")
	var d net.Dialer
	d.Dial(network, "example.com:80")
	net.DialTCP("tcp", nil, &net.TCPAddr{})
	net.Dial("unix", "/tmp/laya.sock")
	d.DialContext(ctx, "unix", "/tmp/laya.sock")
}
