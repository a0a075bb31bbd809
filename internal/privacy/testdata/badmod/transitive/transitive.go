// Package transitive reaches net/http through package direct: a violation.
package transitive

import "example.com/badmod/direct"

// Fetch fetches a URL.
func Fetch(u string) error {
	_, err := direct.Get(u)
	return err
}
