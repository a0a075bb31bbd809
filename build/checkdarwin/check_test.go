package main

import (
	"strings"
	"testing"
)

func TestCatchesMacdriverMisuse(t *testing.T) {
	r, err := Check(".", []string{"./testdata/bad", "./testdata/good"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) != 1 {
		t.Fatalf("want exactly the one misuse in testdata/bad, got %d errors:\n%s", len(r.Errors), strings.Join(r.Errors, "\n"))
	}
	e := r.Errors[0]
	if !strings.Contains(e, "bad_darwin.go:8") || !strings.Contains(e, `"accessory"`) {
		t.Errorf("error %q, want the SetActivationPolicy string argument at bad_darwin.go:8", e)
	}
	if r.Ours != 2 || r.Packages < 10 {
		t.Errorf("checked %d packages, %d ours; want both testdata packages and their dependencies", r.Packages, r.Ours)
	}
}

func TestListError(t *testing.T) {
	r, err := Check(".", []string{"./testdata/nonexistent"})
	if err == nil && len(r.Errors) == 0 {
		t.Fatal("a missing package must be an error")
	}
}
