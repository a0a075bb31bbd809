// Package download is the allowed network user.
package download

import (
	"net"
	"net/http"
)

// Get fetches a URL.
func Get(u string) (*http.Response, error) { return http.Get(u) }

// Raw dials TCP, which is allowed here.
func Raw() (net.Conn, error) { return net.Dial("tcp", "example.com:80") }
