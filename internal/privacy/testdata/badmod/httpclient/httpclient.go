// Package httpclient reaches out in the ways beyond net.Dial the checker must catch.
package httpclient

import (
	"context"
	"crypto/tls"
	"net"
	h "net/http"
)

// All reaches out.
func All(ctx context.Context) {
	c := &h.Client{}
	req, _ := h.NewRequestWithContext(ctx, "GET", "http://example.invalid/", nil)
	c.Do(req)
	tls.Dial("tcp", "example.invalid:443", nil)
	net.ListenUDP("udp", nil)
	net.ListenPacket("udp", ":0")
	net.ListenPacket("unixgram", "/tmp/laya.dgram")
}
