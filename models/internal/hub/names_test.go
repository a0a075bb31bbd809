package hub

import "testing"

func TestRepo(t *testing.T) {
	for _, ok := range []string{"mlx-community/Qwen2.5-0.5B-Instruct-4bit", "a/b", "A_b/c.d-e"} {
		if err := Repo(ok); err != nil {
			t.Errorf("Repo(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "/a", "a/", "a/b/c", "../a", "a/..", "a b/c", "a/b?x", "a/b#c", "a/%2e"} {
		if Repo(bad) == nil {
			t.Errorf("Repo(%q) accepted", bad)
		}
	}
}

func TestFile(t *testing.T) {
	for _, ok := range []string{"config.json", "sub/model.safetensors", "a..b"} {
		if !File(ok) {
			t.Errorf("File(%q) rejected", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../../x", "a//b", "./a", `a\b`, "a/", "a\x00"} {
		if File(bad) {
			t.Errorf("File(%q) accepted", bad)
		}
	}
}

func TestSourceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadSource(dir); err == nil {
		t.Fatal("read a missing source file")
	}
	want := Source{Repo: "org/m", Commit: "abc"}
	if err := WriteSource(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSource(dir); err != nil || got != want {
		t.Fatalf("got %+v, %v", got, err)
	}
	if err := WriteSource(dir, Source{Repo: "../x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSource(dir); err == nil {
		t.Fatal("accepted an unsafe repository")
	}
}
