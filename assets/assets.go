// Package assets holds small files compiled into the laya binary.
package assets

import _ "embed"

// Catalog is assets/catalog.toml: the curated models `laya pull` and the app's Download menu offer.
//
//go:embed catalog.toml
var Catalog []byte
