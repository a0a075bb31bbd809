package download

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub serves the two hub endpoints Pull uses, shaped like the real ones:
// GET /api/models/{org}/{name}/revision/{rev}?blobs=true and GET /{org}/{name}/resolve/{commit}/{file}.
type fakeHub struct {
	t      testing.TB
	srv    *httptest.Server
	repo   string
	commit string
	files  map[string][]byte
	lfs    map[string]bool // stored in LFS: listed with an lfs block holding the sha256
	token  string          // when set, requests need "Authorization: Bearer <token>"
	gated  bool            // answer every request like a gated repository without access

	mu        sync.Mutex
	corrupt   map[string]bool // serve the file with one byte flipped
	dropAfter map[string]int  // abort the connection after this many bytes, once
	holdAfter map[string]int  // after this many bytes, send nothing more until the client goes, once
	held      chan string     // receives the file name when a hold begins
	noRange   bool            // ignore Range headers
	requests  []string        // "GET path range"
}

func newFakeHub(t testing.TB) *fakeHub {
	h := &fakeHub{
		t:      t,
		repo:   "org/model",
		commit: "0123456789abcdef0123456789abcdef01234567",
		files: map[string][]byte{
			"config.json":            []byte(`{"model_type": "llama", "hidden_size": 64}` + "\n"),
			"tokenizer.json":         []byte(`{"version": "1.0", "model": {"type": "BPE"}}`),
			"model.safetensors":      randomBytes(3<<20 + 12345),
			"README.md":              []byte("# model\n"),
			".gitattributes":         []byte("*.safetensors filter=lfs diff=lfs merge=lfs -text\n"),
			"generation_config.json": []byte("{}"),
		},
		lfs:       map[string]bool{"model.safetensors": true},
		corrupt:   map[string]bool{},
		dropAfter: map[string]int{},
		holdAfter: map[string]int{},
		held:      make(chan string, 4),
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// gitBlobID is git's object id for a blob: SHA-1 over "blob <len>\x00" and the content.
func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (h *fakeHub) log(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+r.Header.Get("Range")))
}

func (h *fakeHub) requestLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.requests...)
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		w.Header().Set("X-Error-Message", "Invalid credentials in Authorization header")
		http.Error(w, `{"error":"Invalid credentials in Authorization header"}`, http.StatusUnauthorized)
		return
	}
	if h.gated {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+h.repo+" is restricted.")
		w.WriteHeader(http.StatusForbidden)
		return
	}
	apiPrefix := "/api/models/" + h.repo + "/revision/"
	filePrefix := "/" + h.repo + "/resolve/" + h.commit + "/"
	switch {
	case strings.HasPrefix(r.URL.Path, apiPrefix):
		rev := strings.TrimPrefix(r.URL.Path, apiPrefix)
		if rev != "main" && rev != h.commit {
			w.Header().Set("X-Error-Code", "RevisionNotFound")
			http.Error(w, `{"error":"Invalid rev id: `+rev+`"}`, http.StatusNotFound)
			return
		}
		if r.URL.Query().Get("blobs") != "true" {
			h.t.Errorf("listing requested without blobs=true: %s", r.URL)
		}
		h.serveInfo(w)
	case strings.HasPrefix(r.URL.Path, filePrefix):
		name := strings.TrimPrefix(r.URL.Path, filePrefix)
		if h.lfs[name] {
			// Like the hub, send LFS files from a content-addressed CDN URL.
			sum := sha256.Sum256(h.files[name])
			http.Redirect(w, r, "/cdn/"+hex.EncodeToString(sum[:]), http.StatusFound)
			return
		}
		h.serveFile(w, r, name)
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		for name, b := range h.files {
			if sum := sha256.Sum256(b); h.lfs[name] && r.URL.Path == "/cdn/"+hex.EncodeToString(sum[:]) {
				h.serveFile(w, r, name)
				return
			}
		}
		http.Error(w, "no such blob", http.StatusNotFound)
	default:
		// The real hub hides repositories the caller cannot see behind a 401.
		w.Header().Set("X-Error-Code", "RepoNotFound")
		w.Header().Set("X-Error-Message", "Repository not found")
		http.Error(w, `{"error":"Repository Not Found"}`, http.StatusUnauthorized)
	}
}

func (h *fakeHub) serveInfo(w http.ResponseWriter) {
	type lfs struct {
		SHA256      string `json:"sha256"`
		Size        int    `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
		BlobID    string `json:"blobId"`
		Size      int    `json:"size"`
		LFS       *lfs   `json:"lfs,omitempty"`
	}
	var sibs []sibling
	for name, b := range h.files {
		s := sibling{RFilename: name, Size: len(b), BlobID: gitBlobID(b)}
		if h.lfs[name] {
			sum := sha256.Sum256(b)
			pointer := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%x\nsize %d\n", sum, len(b))
			s.BlobID = gitBlobID([]byte(pointer))
			s.LFS = &lfs{SHA256: hex.EncodeToString(sum[:]), Size: len(b), PointerSize: len(pointer)}
		}
		sibs = append(sibs, s)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(map[string]any{
		"_id":          "66f1b1e0c0ffee0000000000",
		"id":           h.repo,
		"modelId":      h.repo,
		"author":       strings.Split(h.repo, "/")[0],
		"sha":          h.commit,
		"lastModified": "2024-09-25T12:00:00.000Z",
		"private":      false,
		"disabled":     false,
		"gated":        false,
		"downloads":    12,
		"likes":        3,
		"library_name": "mlx",
		"tags":         []string{"mlx", "safetensors", "llama"},
		"pipeline_tag": "text-generation",
		"siblings":     sibs,
		"usedStorage":  3 << 20,
	})
}

func (h *fakeHub) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, ok := h.files[name]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	if h.corrupt[name] {
		b = append([]byte(nil), b...)
		b[len(b)/2] ^= 0x40
	}
	drop, dropping := h.dropAfter[name]
	delete(h.dropAfter, name)
	hold, holding := h.holdAfter[name]
	delete(h.holdAfter, name)
	noRange := h.noRange
	h.mu.Unlock()

	start := 0
	if rg := r.Header.Get("Range"); rg != "" && !noRange {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if err != nil || !strings.HasSuffix(rg, "-") {
			h.t.Errorf("unexpected Range header %q", rg)
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		if n >= len(b) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(b)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(b)-1, len(b)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)-start))
	w.Header().Set("ETag", `"`+gitBlobID(b)+`"`)
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	body := b[start:]
	if dropping && drop < len(body) {
		w.Write(body[:drop])
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond) // let the bytes reach the client before the reset
		panic(http.ErrAbortHandler)
	}
	if holding && hold < len(body) {
		w.Write(body[:hold])
		w.(http.Flusher).Flush()
		h.held <- name
		<-r.Context().Done()
		return
	}
	w.Write(body)
}
