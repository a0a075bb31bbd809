// Package direct imports net/http itself: a violation.
package direct

import "net/http"

// Get fetches a URL.
func Get(u string) (*http.Response, error) { return http.Get(u) }
