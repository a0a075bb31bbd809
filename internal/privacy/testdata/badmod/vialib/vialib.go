// Package vialib reaches a network client in a third-party module.
package vialib

import "example.com/lib"

// Log reports.
func Log(s string) { lib.Report(s) }
