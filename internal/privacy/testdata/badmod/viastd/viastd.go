// Package viastd links net/http through a standard package (expvar registers an HTTP handler).
package viastd

import "expvar"

// Hits counts something.
var Hits = expvar.NewInt("hits")
