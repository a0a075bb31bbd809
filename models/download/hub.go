// Package download fetches models from the HuggingFace hub: it lists a repository's files through
// the hub API, downloads the ones a model needs with resume, verifies every byte against the hub's
// checksums and moves the model into place only when it is complete.
//
// It is the only package of Laya allowed to use the network (internal/privacy enforces this), and
// it talks only to the hub endpoint it is given, only when a user asked for a download.
package download

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/layaapp/laya/models/internal/hub"
)

// DefaultEndpoint is the public HuggingFace hub, used when neither Options.Endpoint nor
// $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// Errors a caller can tell apart with errors.Is; the returned errors wrap them with details.
var (
	ErrNotFound     = errors.New("not found on the hub")
	ErrUnauthorized = errors.New("not authorized by the hub")
	ErrOffline      = errors.New("cannot reach the hub")
	ErrChecksum     = errors.New("checksum mismatch")
	ErrNoSpace      = errors.New("not enough free disk space")
)

// Options configure a Client. The zero value downloads from $HF_ENDPOINT (or DefaultEndpoint)
// with $HF_TOKEN.
type Options struct {
	Endpoint string       // hub base URL; "" = $HF_ENDPOINT, else DefaultEndpoint
	Token    string       // bearer token; "" = $HF_TOKEN
	HTTP     *http.Client // nil = a client with connect and response-header timeouts
	// Attempts is how many times one file is tried when the transfer breaks off; each new try
	// resumes where the last one stopped. 0 = 4.
	Attempts int
	// Stall aborts a transfer that receives nothing for this long (then it is retried). 0 = 60s.
	Stall time.Duration
	// Progress, when set, is called as bytes arrive (at most about ten times a second) and once
	// when each file completes.
	Progress func(Progress)
	// FreeSpace reports the bytes available to us on the file system holding dir. nil = statfs.
	FreeSpace func(dir string) (uint64, error)
}

// Client downloads from one hub endpoint. Several Pulls of different models may run at once;
// each calls Options.Progress from its own goroutine.
type Client struct {
	endpoint   string
	token      string
	http       *http.Client
	attempts   int
	stall      time.Duration
	progress   func(Progress)
	freeSpace  func(string) (uint64, error)
	retryDelay time.Duration
	now        func() time.Time
}

// New returns a Client for opt.
func New(opt Options) *Client {
	c := &Client{
		endpoint:   opt.Endpoint,
		token:      opt.Token,
		http:       opt.HTTP,
		attempts:   opt.Attempts,
		stall:      opt.Stall,
		progress:   opt.Progress,
		freeSpace:  opt.FreeSpace,
		retryDelay: time.Second,
		now:        time.Now,
	}
	if c.endpoint == "" {
		c.endpoint = os.Getenv("HF_ENDPOINT")
	}
	if c.endpoint == "" {
		c.endpoint = DefaultEndpoint
	}
	c.endpoint = strings.TrimRight(c.endpoint, "/")
	if c.token == "" {
		c.token = os.Getenv("HF_TOKEN")
	}
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 30 * time.Second
		c.http = &http.Client{Transport: t}
	}
	if c.attempts <= 0 {
		c.attempts = 4
	}
	if c.stall <= 0 {
		c.stall = time.Minute
	}
	if c.freeSpace == nil {
		c.freeSpace = statfsFree
	}
	return c
}

// File is one file of a hub repository at one commit.
type File struct {
	Name   string // path inside the repository
	Size   int64
	SHA256 string // hex; set for files stored in LFS (the weights)
	BlobID string // git blob id (hex SHA-1); checks files that are not in LFS
}

// Listing is a repository's files at a resolved commit.
type Listing struct {
	Repo   string
	Commit string
	Files  []File
}

// hubInfo is the part of GET /api/models/{repo}/revision/{rev}?blobs=true that we use.
type hubInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
		Size      *int64 `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// maxListing bounds the listing we read: real ones are a few kilobytes, even for large repos.
const maxListing = 16 << 20

// List returns the files of repo at revision ("" = "main"), with sizes and checksums.
func (c *Client) List(ctx context.Context, repo, revision string) (*Listing, error) {
	if err := hub.Repo(repo); err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	if revision == "" {
		revision = "main"
	}
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.endpoint, repo, url.PathEscape(revision))
	resp, err := c.get(ctx, u, 0)
	if err != nil {
		return nil, fmt.Errorf("download: list %s@%s: %w", repo, revision, err)
	}
	defer resp.Body.Close()
	if err := c.statusError(resp); err != nil {
		return nil, fmt.Errorf("download: list %s@%s: %w", repo, revision, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListing+1))
	if err != nil {
		return nil, fmt.Errorf("download: list %s@%s: %w", repo, revision, err)
	}
	if len(body) > maxListing {
		return nil, fmt.Errorf("download: list %s@%s: listing larger than %d bytes", repo, revision, maxListing)
	}
	var info hubInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("download: list %s@%s: bad hub response: %w", repo, revision, err)
	}
	if !isHex(info.SHA, 40) {
		return nil, fmt.Errorf("download: list %s@%s: hub response has no commit sha", repo, revision)
	}
	l := &Listing{Repo: repo, Commit: info.SHA}
	for _, s := range info.Siblings {
		if !hub.File(s.RFilename) {
			return nil, fmt.Errorf("download: list %s@%s: unsafe file name %q", repo, revision, s.RFilename)
		}
		f := File{Name: s.RFilename}
		switch {
		case s.LFS != nil:
			if !isHex(s.LFS.SHA256, 64) || s.LFS.Size < 0 {
				return nil, fmt.Errorf("download: list %s@%s: %s: bad lfs metadata", repo, revision, s.RFilename)
			}
			f.Size, f.SHA256 = s.LFS.Size, strings.ToLower(s.LFS.SHA256)
		case s.Size != nil && *s.Size >= 0:
			f.Size = *s.Size
			if isHex(s.BlobID, 40) {
				f.BlobID = strings.ToLower(s.BlobID)
			}
		default:
			// Without blobs=true the hub omits sizes; we need them for resume and the space check.
			return nil, fmt.Errorf("download: list %s@%s: %s: hub response has no size", repo, revision, s.RFilename)
		}
		l.Files = append(l.Files, f)
	}
	return l, nil
}

// get issues a GET with our headers; offset > 0 asks for the bytes from offset on.
func (c *Client) get(ctx context.Context, u string, offset int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "laya")
	if c.token != "" {
		// net/http drops this header when the hub redirects to another host (its CDN), which is
		// what we want: the token is for the hub only.
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrOffline, c.endpoint, err)
	}
	return resp, nil
}

// statusError turns a failed hub response into an error that says what the user can do.
func (c *Client) statusError(resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		msg = strings.TrimSpace(string(b))
	}
	if msg != "" {
		msg = " (hub says: " + msg + ")"
	}
	hint := "set HF_TOKEN to a HuggingFace access token"
	if c.token != "" {
		hint = "check that HF_TOKEN is valid and has access"
	}
	switch {
	case code == http.StatusNotFound:
		return fmt.Errorf("%w%s", ErrNotFound, msg)
	case code == http.StatusUnauthorized && resp.Header.Get("X-Error-Code") == "RepoNotFound":
		// The hub answers 401 for repositories that do not exist or that the caller may not see.
		return fmt.Errorf("%w, or private (%s)%s", ErrNotFound, hint, msg)
	case code == http.StatusUnauthorized:
		return fmt.Errorf("%w: %s%s", ErrUnauthorized, hint, msg)
	case code == http.StatusForbidden:
		return fmt.Errorf("%w: the repository is gated; accept its terms on the hub, then %s%s", ErrUnauthorized, hint, msg)
	default:
		return &statusErr{code: code, msg: msg}
	}
}

// statusErr is an HTTP failure other than the ones with sentinels; 5xx and 429 are worth retrying.
type statusErr struct {
	code int
	msg  string
}

func (e *statusErr) Error() string {
	return fmt.Sprintf("hub answered %d %s%s", e.code, http.StatusText(e.code), e.msg)
}

func (e *statusErr) transient() bool { return e.code >= 500 || e.code == http.StatusTooManyRequests }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}
