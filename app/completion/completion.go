// Package completion maps the app controller's requests to the completer's through
// server.Request, the mapping the socket, the HTTP endpoints and laya complete use, so the app
// (and laya replay, which drives the app's controller) validate and map a request as they do.
package completion

import (
	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/server"
)

// Client is the completion client id of the app's own requests, so they get their own session
// (and KV cache) apart from CLI and editor clients.
const Client = "laya-app"

// Request is the completer's request for r.
func Request(r controller.Request) (complete.Request, error) {
	return server.Request{
		Client: Client, Prefix: r.Prefix, Suffix: r.Suffix, App: r.App, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP,
	}.Completion()
}
