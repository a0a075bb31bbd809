package darwinonly

import "net/http"

// Client is the macOS-only network client.
var Client = http.DefaultClient
