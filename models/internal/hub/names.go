// Package hub holds what the catalog, discovery and the downloader share about HuggingFace hub
// repositories: validation of the names that come from the hub or a catalog (repository
// ids and file paths) before they are put into URLs or joined to local directories.
package hub

import (
	"fmt"
	"path"
	"strings"
)

// Repo checks that repo has the hub's "org/name" shape, with nothing that could escape a URL path
// or a directory.
func Repo(repo string) error {
	org, name, ok := strings.Cut(repo, "/")
	if !ok || !repoPart(org) || !repoPart(name) {
		return fmt.Errorf("repository %q is not of the form org/name", repo)
	}
	return nil
}

func repoPart(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 96 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

// File reports whether p is a clean relative slash path that stays inside its directory.
func File(p string) bool {
	return p != "" && p != "." && p != ".." && path.Clean(p) == p && !path.IsAbs(p) &&
		!strings.HasPrefix(p, "../") && !strings.ContainsAny(p, "\\\x00")
}
