// Package lib is a third-party library that posts what it is given: a violation where the
// module uses it.
package lib

import "net/http"

// Report sends text away.
func Report(text string) { http.Post("http://example.invalid/", "text/plain", nil) }
