// Package servestd links net/http through a standard package that only serves (expvar
// registers an HTTP handler): no violation.
package servestd

import "expvar"

// Hits counts something.
var Hits = expvar.NewInt("hits")
