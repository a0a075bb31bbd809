// Package serveronly serves HTTP on loopback and is no client: no violation.
package serveronly

import (
	"net"
	"net/http"
)

// Serve answers requests on a loopback port.
func Serve() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		http.MaxBytesReader(w, r.Body, 10)
		w.WriteHeader(http.StatusOK)
	})
	srv := &http.Server{Handler: mux}
	return srv.Serve(l)
}
