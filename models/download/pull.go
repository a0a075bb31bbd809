package download

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/layaapp/laya/models/internal/hub"
)

// Request says what to download and where.
type Request struct {
	Repo     string
	Revision string   // branch, tag or commit; "" = "main"
	Files    []string // exact files to fetch; empty = what Select picks
	// Dest is the model's final directory. It appears only once every file is complete and
	// verified; until then the files live in StagingDir(Dest).
	Dest string
}

// Result describes a completed Pull.
type Result struct {
	Dir              string
	Commit           string // the commit the files came from
	Files            []File
	Fetched          int64 // bytes received by this call (less than the total after a resume)
	AlreadyInstalled bool  // Dest existed, so nothing was fetched
}

// StagingDir is where Pull keeps the files of dest while they download: a hidden sibling, so
// model discovery never sees a half-downloaded model, and a later Pull resumes from it.
func StagingDir(dest string) string {
	dest = filepath.Clean(dest)
	return filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".partial")
}

const (
	lockFile = ".lock"
	// spaceMargin is left free beyond the download itself, so a full disk does not take down
	// the rest of the system.
	spaceMargin = 64 << 20
	bufSize     = 1 << 20
)

var errInterrupted = errors.New("transfer interrupted")

// Pull downloads req.Repo's model files into req.Dest, resuming whatever an earlier interrupted
// Pull left, checking free space first and every file's checksum at the end. Canceling ctx stops
// it; the partial files stay for the next Pull.
func (c *Client) Pull(ctx context.Context, req Request) (Result, error) {
	if req.Dest == "" {
		return Result{}, errors.New("download: no destination directory")
	}
	dest := filepath.Clean(req.Dest)
	if _, err := os.Stat(dest); err == nil {
		return Result{Dir: dest, AlreadyInstalled: true}, nil
	}
	l, err := c.List(ctx, req.Repo, req.Revision)
	if err != nil {
		return Result{}, err
	}
	files, err := Select(l, req.Files)
	if err != nil {
		return Result{}, err
	}
	stage := StagingDir(dest)
	unlock, err := c.prepareStage(stage, hub.Source{Repo: l.Repo, Commit: l.Commit})
	if err != nil {
		return Result{}, err
	}
	defer unlock()

	var total, have int64
	for _, f := range files {
		total += f.Size
		have += onDisk(stage, f)
	}
	free, err := c.freeSpace(stage)
	if err != nil {
		return Result{}, fmt.Errorf("download: free space on %s: %w", stage, err)
	}
	if need := total - have; uint64(need)+spaceMargin > free {
		return Result{}, fmt.Errorf("download: %s needs %s more and %s to spare, but %s has %s free: %w",
			req.Repo, FormatBytes(need), FormatBytes(spaceMargin), filepath.Dir(dest), FormatBytes(int64(free)), ErrNoSpace)
	}

	m := newMeter(c.now, c.progress, have, total)
	buf := make([]byte, bufSize)
	for _, f := range files {
		if err := c.fetch(ctx, l, stage, f, m, buf); err != nil {
			return Result{}, err
		}
	}
	// The lock file is not part of the model; the held descriptor keeps locking until unlock.
	os.Remove(filepath.Join(stage, lockFile))
	if err := os.Rename(stage, dest); err != nil {
		return Result{}, fmt.Errorf("download: install %s: %w", dest, err)
	}
	return Result{Dir: dest, Commit: l.Commit, Files: files, Fetched: m.fetched}, nil
}

// prepareStage creates the staging dir, takes its lock and clears it if it holds files of
// another repository or commit (their partial bytes would never match the new checksums). The
// staging dir's hub.SourceFile says which; it stays in the installed model.
func (c *Client) prepareStage(stage string, src hub.Source) (unlock func(), err error) {
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	unlock, err = lockDir(filepath.Join(stage, lockFile))
	if err != nil {
		return nil, fmt.Errorf("download: %s: %w", stage, err)
	}
	if old, err := hub.ReadSource(stage); err == nil && old == src {
		return unlock, nil
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("download: %w", err)
	}
	for _, e := range entries {
		if e.Name() == lockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(stage, e.Name())); err != nil {
			unlock()
			return nil, fmt.Errorf("download: clear stale %s: %w", stage, err)
		}
	}
	if err := hub.WriteSource(stage, src); err != nil {
		unlock()
		return nil, fmt.Errorf("download: %w", err)
	}
	return unlock, nil
}

// onDisk is how many of f's bytes the staging dir already holds.
func onDisk(stage string, f File) int64 {
	final := filepath.Join(stage, filepath.FromSlash(f.Name))
	if st, err := os.Stat(final); err == nil && st.Size() == f.Size {
		return f.Size
	}
	if st, err := os.Stat(final + ".partial"); err == nil && st.Size() <= f.Size {
		return st.Size()
	}
	return 0
}

// verifier hashes a file the way the hub's metadata identifies it.
type verifier struct {
	h    hash.Hash
	want string
	kind string
	size int64
	n    int64 // bytes hashed so far
}

func newVerifier(f File) *verifier {
	v := &verifier{size: f.Size}
	switch {
	case f.SHA256 != "":
		v.h, v.want, v.kind = sha256.New(), f.SHA256, "sha256"
	case f.BlobID != "":
		v.h, v.want, v.kind = sha1.New(), f.BlobID, "git blob id"
	}
	v.reset()
	return v
}

func (v *verifier) reset() {
	v.n = 0
	if v.h == nil {
		return
	}
	v.h.Reset()
	if v.kind == "git blob id" {
		// A git blob id is the SHA-1 of "blob <size>\x00" followed by the content.
		fmt.Fprintf(v.h, "blob %d\x00", v.size)
	}
}

func (v *verifier) write(p []byte) {
	if v.h != nil {
		v.h.Write(p)
	}
	v.n += int64(len(p))
}

func (v *verifier) check() error {
	if v.h == nil {
		return nil
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
		return fmt.Errorf("%w: %s is %s, the hub says %s", ErrChecksum, v.kind, got, v.want)
	}
	return nil
}

// fetch makes f complete and verified in stage, resuming a partial file and retrying broken
// transfers.
func (c *Client) fetch(ctx context.Context, l *Listing, stage string, f File, m *meter, buf []byte) error {
	final := filepath.Join(stage, filepath.FromSlash(f.Name))
	if st, err := os.Stat(final); err == nil && st.Size() == f.Size {
		return nil // verified before it was renamed
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	part := final + ".partial"
	file, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer file.Close()
	m.startFile(f.Name)
	v := newVerifier(f)
	for attempt := 1; ; attempt++ {
		err = c.fetchOnce(ctx, l, f, file, v, m, buf)
		if err == nil || ctx.Err() != nil || attempt == c.attempts || !transient(err) {
			break
		}
		select {
		case <-time.After(c.retryDelay * time.Duration(attempt)):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("download: %s: %w", f.Name, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("download: %s: %w", f.Name, err)
	}
	if err := v.check(); err != nil {
		// Resuming would keep the bad bytes, so they go.
		file.Close()
		os.Remove(part)
		m.add(-f.Size)
		return fmt.Errorf("download: %s: %w", f.Name, err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("download: %s: %w", f.Name, err)
	}
	if err := os.Rename(part, final); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	m.report(true)
	return nil
}

func transient(err error) bool {
	var se *statusErr
	return errors.Is(err, errInterrupted) || errors.Is(err, ErrOffline) || errors.As(err, &se) && se.transient()
}

// fetchOnce brings file (the partial) up to f.Size bytes with one request, hashing as it goes.
func (c *Client) fetchOnce(ctx context.Context, l *Listing, f File, file *os.File, v *verifier, m *meter, buf []byte) error {
	st, err := file.Stat()
	if err != nil {
		return err
	}
	offset := st.Size()
	if offset > f.Size {
		if err := truncate(file, m, offset); err != nil {
			return err
		}
		offset = 0
	}
	if v.n != offset {
		// The hash state does not match the bytes on disk (a new run, or a failed write):
		// rebuild it from the file.
		v.reset()
		if _, err := io.CopyBuffer(hashWriter{v}, io.NewSectionReader(file, 0, offset), buf); err != nil {
			return err
		}
	}
	if offset == f.Size {
		return nil
	}

	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := time.AfterFunc(c.stall, func() { cancel(fmt.Errorf("%w: no data for %v", errInterrupted, c.stall)) })
	defer stalled.Stop()

	resp, err := c.get(reqCtx, c.fileURL(l, f.Name), offset)
	if err != nil {
		if cause := context.Cause(reqCtx); ctx.Err() == nil && cause != nil {
			return cause
		}
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// Our partial does not fit the file on the server: start over.
		if err := truncate(file, m, offset); err != nil {
			return err
		}
		v.reset()
		return fmt.Errorf("%w: server refused to resume at byte %d", errInterrupted, offset)
	case offset > 0 && resp.StatusCode == http.StatusOK:
		// The server ignored our Range header and sends everything.
		if err := truncate(file, m, offset); err != nil {
			return err
		}
		v.reset()
		offset = 0
	case resp.StatusCode == http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != offset {
			return fmt.Errorf("%w: server sent range %q for a request from byte %d", errInterrupted, resp.Header.Get("Content-Range"), offset)
		}
	default:
		if err := c.statusError(resp); err != nil {
			return err
		}
	}
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	left := f.Size - offset
	for left > 0 {
		n, rerr := resp.Body.Read(buf[:min(int64(len(buf)), left)])
		if n > 0 {
			stalled.Reset(c.stall)
			if _, werr := file.Write(buf[:n]); werr != nil {
				return werr
			}
			v.write(buf[:n])
			m.add(int64(n))
			left -= int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cause := context.Cause(reqCtx); ctx.Err() == nil && cause != nil && errors.Is(cause, errInterrupted) {
				return cause
			}
			return fmt.Errorf("%w after %d of %d bytes: %w", errInterrupted, f.Size-left, f.Size, rerr)
		}
	}
	if left > 0 {
		return fmt.Errorf("%w: server ended the file after %d of %d bytes", errInterrupted, f.Size-left, f.Size)
	}
	return nil
}

// truncate discards the partial file's bytes (size of them) and their progress.
func truncate(file *os.File, m *meter, size int64) error {
	if err := file.Truncate(0); err != nil {
		return err
	}
	m.add(-size)
	return nil
}

type hashWriter struct{ v *verifier }

func (w hashWriter) Write(p []byte) (int, error) {
	w.v.write(p)
	return len(p), nil
}

// fileURL is the hub's download URL for one file, pinned to the listed commit so every file
// comes from the same revision even if the branch moves meanwhile.
func (c *Client) fileURL(l *Listing, name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", c.endpoint, l.Repo, l.Commit, strings.Join(parts, "/"))
}

// contentRangeStart parses the first byte of "bytes START-END/TOTAL".
func contentRangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(start, 10, 64)
	return n, err == nil && n >= 0
}

// FormatBytes formats n with a binary unit, e.g. "1.5 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for q := n / unit; q >= unit; q /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
