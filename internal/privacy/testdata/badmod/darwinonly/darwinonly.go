// Package darwinonly is clean on Linux and imports net/http on macOS only.
package darwinonly
