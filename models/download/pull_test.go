package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/models/internal/hub"
)

func testClient(h *fakeHub, opt Options) *Client {
	if opt.Endpoint == "" && h != nil {
		opt.Endpoint = h.srv.URL
	}
	if opt.FreeSpace == nil {
		opt.FreeSpace = func(string) (uint64, error) { return 1 << 40, nil }
	}
	c := New(opt)
	c.retryDelay = time.Millisecond
	return c
}

// wantFiles is what Select must pick from the fake hub's repository.
var wantFiles = []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"}

func checkInstalled(t *testing.T, h *fakeHub, dir string) {
	t.Helper()
	for _, name := range wantFiles {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, h.files[name]) {
			t.Fatalf("%s: content differs from the hub's (%d vs %d bytes)", name, len(got), len(h.files[name]))
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if !slices.Equal(names, wantFiles) {
		t.Errorf("installed files %v, want %v", names, wantFiles)
	}
	if _, err := os.Stat(StagingDir(dir)); !os.IsNotExist(err) {
		t.Errorf("staging dir still there: %v", err)
	}
}

func totalSize(h *fakeHub) int64 {
	var n int64
	for _, name := range wantFiles {
		n += int64(len(h.files[name]))
	}
	return n
}

func TestPullFull(t *testing.T) {
	h := newFakeHub(t)
	var last Progress
	var calls int
	c := testClient(h, Options{Progress: func(p Progress) { last = p; calls++ }})
	dest := filepath.Join(t.TempDir(), "models", "org--model")
	res, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	if src, err := hub.ReadSource(dest); err != nil || src != (hub.Source{Repo: h.repo, Commit: h.commit}) {
		t.Errorf("source record %+v, %v", src, err)
	}
	if res.Commit != h.commit || res.Fetched != totalSize(h) || res.AlreadyInstalled {
		t.Errorf("result %+v, want commit %s and %d bytes fetched", res, h.commit, totalSize(h))
	}
	if calls == 0 || last.Done != last.Total || last.Total != totalSize(h) {
		t.Errorf("last progress %+v after %d calls, want Done = Total = %d", last, calls, totalSize(h))
	}
	// Installed models are never fetched again.
	n := len(h.requestLog())
	res, err = c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil || !res.AlreadyInstalled {
		t.Fatalf("second pull: %+v, %v", res, err)
	}
	if len(h.requestLog()) != n {
		t.Errorf("second pull talked to the hub: %v", h.requestLog()[n:])
	}
}

func TestPullUsesTokenFromEnv(t *testing.T) {
	h := newFakeHub(t)
	h.token = "hf_secret"
	dest := filepath.Join(t.TempDir(), "m")

	t.Setenv("HF_TOKEN", "")
	_, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("without a token: %v, want ErrUnauthorized mentioning HF_TOKEN", err)
	}
	_, err = testClient(h, Options{Token: "hf_wrong"}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check that HF_TOKEN is valid") {
		t.Fatalf("wrong token: %v", err)
	}
	t.Setenv("HF_TOKEN", "hf_secret")
	if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
}

func TestPullEndpointFromEnv(t *testing.T) {
	h := newFakeHub(t)
	t.Setenv("HF_ENDPOINT", h.srv.URL+"/")
	c := New(Options{FreeSpace: func(string) (uint64, error) { return 1 << 40, nil }})
	if c.endpoint != h.srv.URL {
		t.Fatalf("endpoint %q, want %q", c.endpoint, h.srv.URL)
	}
	t.Setenv("HF_ENDPOINT", "")
	if New(Options{}).endpoint != DefaultEndpoint {
		t.Fatal("no HF_ENDPOINT should mean the public hub")
	}
}

func TestPullNotFound(t *testing.T) {
	h := newFakeHub(t)
	c := testClient(h, Options{})
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"repo", Request{Repo: "org/missing"}, "private"},
		{"revision", Request{Repo: h.repo, Revision: "v9"}, "not found"},
		{"file", Request{Repo: h.repo, Files: []string{"model-q4.gguf"}}, `no file "model-q4.gguf"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Dest = filepath.Join(dir, tc.name)
			_, err := c.Pull(context.Background(), tc.req)
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrNotFound mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(tc.req.Dest); !os.IsNotExist(err) {
				t.Errorf("destination created: %v", err)
			}
		})
	}
	// A file in the listing that the server cannot serve.
	h.files["ghost.json"] = []byte("{}")
	l, err := c.List(context.Background(), h.repo, "")
	if err != nil {
		t.Fatal(err)
	}
	delete(h.files, "ghost.json")
	m := newMeter(time.Now, nil, 0, 2)
	stage := t.TempDir()
	err = c.fetch(context.Background(), l, stage, File{Name: "ghost.json", Size: 2}, m, make([]byte, 16))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("vanished file: %v, want ErrNotFound", err)
	}
}

func TestPullGated(t *testing.T) {
	h := newFakeHub(t)
	h.gated = true
	_, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: filepath.Join(t.TempDir(), "m")})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "gated") || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("err = %v, want ErrUnauthorized explaining the gate", err)
	}
}

func TestPullOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := testClient(nil, Options{Endpoint: "http://" + addr})
	_, err = c.Pull(context.Background(), Request{Repo: "org/model", Dest: filepath.Join(t.TempDir(), "m")})
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want ErrOffline naming %s", err, addr)
	}
}

func TestPullResumesPartialFile(t *testing.T) {
	h := newFakeHub(t)
	dest := filepath.Join(t.TempDir(), "m")
	stage := StagingDir(dest)
	weights := h.files["model.safetensors"]
	const have = 1<<20 + 7
	os.MkdirAll(stage, 0o755)
	hub.WriteSource(stage, hub.Source{Repo: h.repo, Commit: h.commit})
	os.WriteFile(filepath.Join(stage, "model.safetensors.partial"), weights[:have], 0o644)

	var first Progress
	c := testClient(h, Options{Progress: func(p Progress) {
		if first.Total == 0 {
			first = p
		}
	}})
	res, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	if want := totalSize(h) - have; res.Fetched != want {
		t.Errorf("fetched %d bytes, want %d (the partial's bytes must not be fetched again)", res.Fetched, want)
	}
	if first.Done != have {
		t.Errorf("first progress Done = %d, want the %d bytes already on disk", first.Done, have)
	}
	sum := sha256.Sum256(weights)
	want := "GET /cdn/" + hex.EncodeToString(sum[:]) + " bytes=1048583-" // after the hub's redirect
	if !slices.Contains(h.requestLog(), want) {
		t.Errorf("no resumed request %q in %q", want, h.requestLog())
	}
}

func TestPullDiscardsStaleCommit(t *testing.T) {
	h := newFakeHub(t)
	dest := filepath.Join(t.TempDir(), "m")
	stage := StagingDir(dest)
	os.MkdirAll(stage, 0o755)
	hub.WriteSource(stage, hub.Source{Repo: h.repo, Commit: "ffffffffffffffffffffffffffffffffffffffff"})
	os.WriteFile(filepath.Join(stage, "model.safetensors.partial"), []byte("bytes of an older revision"), 0o644)
	if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	for _, r := range h.requestLog() {
		if strings.Contains(r, "bytes=") {
			t.Errorf("resumed from another commit's partial file: %s", r)
		}
	}
}

func TestPullRejectsCorruptBytes(t *testing.T) {
	for _, name := range []string{"model.safetensors", "config.json"} { // sha256 (LFS), git blob id
		t.Run(name, func(t *testing.T) {
			h := newFakeHub(t)
			h.corrupt[name] = true
			dest := filepath.Join(t.TempDir(), "m")
			c := testClient(h, Options{})
			_, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
			if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), name) {
				t.Fatalf("err = %v, want ErrChecksum for %s", err, name)
			}
			if _, err := os.Stat(dest); !os.IsNotExist(err) {
				t.Fatal("a corrupt model was installed")
			}
			if _, err := os.Stat(filepath.Join(StagingDir(dest), name+".partial")); !os.IsNotExist(err) {
				t.Error("corrupt partial file kept; a resume would keep its bad bytes")
			}
			h.corrupt[name] = false
			if _, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
				t.Fatal(err)
			}
			checkInstalled(t, h, dest)
		})
	}
}

func TestPullCorruptPartialPrefixRejected(t *testing.T) {
	h := newFakeHub(t)
	dest := filepath.Join(t.TempDir(), "m")
	stage := StagingDir(dest)
	bad := append([]byte(nil), h.files["model.safetensors"][:1000]...)
	bad[10] ^= 1
	os.MkdirAll(stage, 0o755)
	hub.WriteSource(stage, hub.Source{Repo: h.repo, Commit: h.commit})
	os.WriteFile(filepath.Join(stage, "model.safetensors.partial"), bad, 0o644)
	_, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum: the partial's bytes were wrong", err)
	}
}

func TestPullSurvivesDroppedConnection(t *testing.T) {
	h := newFakeHub(t)
	h.dropAfter["model.safetensors"] = 1<<20 + 99
	dest := filepath.Join(t.TempDir(), "m")

	// One attempt: the drop surfaces as an error and the partial file keeps what arrived.
	_, err := testClient(h, Options{Attempts: 1}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err == nil || !errors.Is(err, errInterrupted) {
		t.Fatalf("err = %v, want an interrupted transfer", err)
	}
	st, err := os.Stat(filepath.Join(StagingDir(dest), "model.safetensors.partial"))
	if err != nil || st.Size() == 0 || st.Size() > 1<<20+99 {
		t.Fatalf("partial after the drop: %v, %v; want up to %d bytes", st, err, 1<<20+99)
	}
	kept := st.Size()

	// The next run resumes from exactly what was kept.
	res, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	if res.Fetched != totalSize(h)-kept {
		t.Errorf("fetched %d, want %d", res.Fetched, totalSize(h)-kept)
	}
}

func TestPullRetriesWithinOneCall(t *testing.T) {
	h := newFakeHub(t)
	h.dropAfter["model.safetensors"] = 500_000
	dest := filepath.Join(t.TempDir(), "m")
	if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	var ranged int
	for _, r := range h.requestLog() {
		if strings.HasPrefix(r, "GET /cdn/") && strings.Contains(r, "bytes=") {
			ranged++
		}
	}
	if ranged != 1 {
		t.Errorf("%d resumed requests, want 1: %q", ranged, h.requestLog())
	}
}

func TestPullServerIgnoresRange(t *testing.T) {
	h := newFakeHub(t)
	h.noRange = true
	dest := filepath.Join(t.TempDir(), "m")
	stage := StagingDir(dest)
	os.MkdirAll(stage, 0o755)
	hub.WriteSource(stage, hub.Source{Repo: h.repo, Commit: h.commit})
	os.WriteFile(filepath.Join(stage, "model.safetensors.partial"), h.files["model.safetensors"][:4096], 0o644)
	var last Progress
	c := testClient(h, Options{Progress: func(p Progress) { last = p }})
	res, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	if last.Done != last.Total {
		t.Errorf("progress ended at %d of %d", last.Done, last.Total)
	}
	if res.Fetched != totalSize(h) {
		t.Errorf("fetched %d, want all %d bytes again", res.Fetched, totalSize(h))
	}
}

func TestPullPartialLongerThanFile(t *testing.T) {
	h := newFakeHub(t)
	dest := filepath.Join(t.TempDir(), "m")
	stage := StagingDir(dest)
	os.MkdirAll(stage, 0o755)
	hub.WriteSource(stage, hub.Source{Repo: h.repo, Commit: h.commit})
	os.WriteFile(filepath.Join(stage, "config.json.partial"), bytes.Repeat([]byte("x"), 5000), 0o644)
	if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
}

func TestPullNoSpace(t *testing.T) {
	h := newFakeHub(t)
	dest := filepath.Join(t.TempDir(), "m")
	c := testClient(h, Options{FreeSpace: func(dir string) (uint64, error) {
		if !strings.HasSuffix(dir, ".m.partial") {
			t.Errorf("free space asked of %s, want the staging dir", dir)
		}
		return 10 << 20, nil // less than the 64 MiB margin plus the model
	}})
	_, err := c.Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "10.0 MiB free") {
		t.Fatalf("err = %v, want ErrNoSpace saying 10.0 MiB free", err)
	}
	for _, r := range h.requestLog() {
		if strings.Contains(r, "/resolve/") {
			t.Errorf("downloaded despite the space check: %s", r)
		}
	}
}

func TestStatfsFree(t *testing.T) {
	free, err := statfsFree(t.TempDir())
	if err != nil || free == 0 {
		t.Fatalf("statfs: %d, %v", free, err)
	}
	if _, err := statfsFree(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("statfs of a missing dir succeeded")
	}
}

func TestPullCanceled(t *testing.T) {
	h := newFakeHub(t)
	h.holdAfter["model.safetensors"] = 1 << 20
	ctx, cancel := context.WithCancel(context.Background())
	dest := filepath.Join(t.TempDir(), "m")
	go func() {
		<-h.held
		// Cancel once the first bytes are on disk, while the server holds the rest back.
		for {
			if st, err := os.Stat(filepath.Join(StagingDir(dest), "model.safetensors.partial")); err == nil && st.Size() > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := testClient(h, Options{}).Pull(ctx, Request{Repo: h.repo, Dest: dest})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if st, err := os.Stat(filepath.Join(StagingDir(dest), "model.safetensors.partial")); err != nil || st.Size() == 0 {
		t.Fatalf("partial kept for resume: %v, %v", st, err)
	}
}

func TestPullStalledTransferRetried(t *testing.T) {
	h := newFakeHub(t)
	h.holdAfter["model.safetensors"] = 1 << 20
	dest := filepath.Join(t.TempDir(), "m")
	res, err := testClient(h, Options{Stall: 50 * time.Millisecond}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
	if res.Fetched != totalSize(h) {
		t.Errorf("fetched %d, want %d", res.Fetched, totalSize(h))
	}
	if !slices.ContainsFunc(h.requestLog(), func(r string) bool { return strings.HasPrefix(r, "GET /cdn/") && strings.Contains(r, "bytes=") }) {
		t.Errorf("stalled transfer was not resumed: %q", h.requestLog())
	}
}

func TestConcurrentPullRefused(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "m")
	os.MkdirAll(StagingDir(dest), 0o755)
	unlock, err := lockDir(filepath.Join(StagingDir(dest), lockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	h := newFakeHub(t)
	_, err = testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest})
	if err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("err = %v, want another download in progress", err)
	}
}

func TestListRejectsUnsafeNames(t *testing.T) {
	h := newFakeHub(t)
	h.files["../../.ssh/authorized_keys"] = []byte("x")
	_, err := testClient(h, Options{}).List(context.Background(), h.repo, "main")
	if err == nil || !strings.Contains(err.Error(), "unsafe file name") {
		t.Fatalf("err = %v, want unsafe file name", err)
	}
	if _, err := testClient(h, Options{}).List(context.Background(), "../etc", "main"); err == nil {
		t.Fatal("unsafe repo accepted")
	}
}

// Known digests from outside this code: `git hash-object` of an empty file and of "hello\n",
// and the FIPS 180-2 SHA-256 test vector for "abc".
func TestVerifierKnownDigests(t *testing.T) {
	for _, tc := range []struct {
		f       File
		content string
	}{
		{File{Size: 0, BlobID: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"}, ""},
		{File{Size: 6, BlobID: "ce013625030ba8dba906f756967f9e9ca394464a"}, "hello\n"},
		{File{Size: 3, SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}, "abc"},
	} {
		v := newVerifier(tc.f)
		v.write([]byte(tc.content))
		if err := v.check(); err != nil {
			t.Errorf("%q: %v", tc.content, err)
		}
		v.reset()
		v.write([]byte(tc.content + "!"))
		if err := v.check(); !errors.Is(err, ErrChecksum) {
			t.Errorf("%q!: %v, want a mismatch", tc.content, err)
		}
	}
	sum := sha256.Sum256([]byte("abc"))
	if hex.EncodeToString(sum[:]) != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal("sha256 test vector")
	}
}

func TestPullZeroSizeFile(t *testing.T) {
	h := newFakeHub(t)
	h.files["generation_config.json"] = nil
	dest := filepath.Join(t.TempDir(), "m")
	if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, h, dest)
}

// BenchmarkPull measures download throughput from a local hub, hashing included.
func BenchmarkPull(b *testing.B) {
	h := newFakeHub(b)
	h.files["model.safetensors"] = randomBytes(32 << 20)
	b.SetBytes(int64(totalSize(h)))
	for i := 0; b.Loop(); i++ {
		dest := filepath.Join(b.TempDir(), "m")
		if _, err := testClient(h, Options{}).Pull(context.Background(), Request{Repo: h.repo, Dest: dest}); err != nil {
			b.Fatal(err)
		}
	}
}
