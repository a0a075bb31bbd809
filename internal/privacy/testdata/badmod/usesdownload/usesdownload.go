// Package usesdownload reaches net/http only through models/download: allowed.
package usesdownload

import "example.com/badmod/models/download"

// Pull downloads.
func Pull() error {
	_, err := download.Get("http://example.invalid/")
	return err
}
