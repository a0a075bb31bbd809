package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/models/download"
)

func init() {
	register("pull", "download a model from the catalog or the HuggingFace hub", runPull)
}

func runPull(args []string) error {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	revision := fs.String("revision", "", "branch, tag or commit (default: the catalog's, else main)")
	file := fs.String("file", "", "the one file to fetch, for a repository of several .gguf files")
	dir := fs.String("dir", "", "models directory (default: config.toml's model_dir, else Laya's)")
	force := fs.Bool("force", false, "download even when Laya, the HuggingFace cache or LM Studio already has the model")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: laya pull [flags] ID|org/name\n\nID is a catalog model (laya models --catalog); org/name any hub repository.\nHF_TOKEN authorizes gated or private repositories; HF_ENDPOINT changes the hub.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return flag.ErrHelp
	}
	cat, err := models.DefaultCatalog()
	if err != nil {
		return err
	}
	if *dir == "" {
		if *dir, err = modelsDir(); err != nil {
			return err
		}
	}
	req := download.Request{Revision: *revision}
	if e, ok := cat.Lookup(fs.Arg(0)); ok {
		req.Repo, req.Files, req.Dest = e.Repo, e.Files, e.InstallPath(*dir)
		if req.Revision == "" {
			req.Revision = e.Revision
		}
	} else if strings.Contains(fs.Arg(0), "/") {
		req.Repo = fs.Arg(0)
	} else {
		return fmt.Errorf("%q is neither a catalog id (see laya models --catalog) nor a hub repository org/name", fs.Arg(0))
	}
	if *file != "" {
		req.Files = []string{*file}
	}
	if req.Dest == "" || *file != "" {
		req.Dest = models.RepoInstallPath(*dir, req.Repo, req.Files)
	}

	if !*force {
		if loc, err := models.DefaultLocations(*dir); err == nil {
			if f, ok := models.FindRepo(models.Discover(loc, models.OpenProbe), req.Repo, req.Files); ok {
				fmt.Printf("%s is already on this Mac (%s): %s\n", req.Repo, f.Source, f.Path)
				return nil
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := newProgressBar(os.Stderr)
	c := download.New(download.Options{Progress: bar.update})
	res, err := c.Pull(ctx, req)
	bar.finish()
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted; run the same laya pull again to resume")
	}
	if err != nil {
		return err
	}
	if res.AlreadyInstalled {
		fmt.Printf("%s is already installed: %s\n", req.Repo, res.Dir)
		return nil
	}
	var size int64
	for _, f := range res.Files {
		size += f.Size
	}
	fmt.Printf("installed %s@%s (%s, %d files): %s\n", req.Repo, res.Commit[:min(7, len(res.Commit))],
		download.FormatBytes(size), len(res.Files), res.Dir)
	return nil
}

// progressBar draws download progress on a terminal, redrawing one line; elsewhere (a pipe,
// a log) it prints a line per file.
type progressBar struct {
	w     io.Writer
	tty   bool
	file  string
	drawn bool
}

func newProgressBar(f *os.File) *progressBar {
	st, err := f.Stat()
	return &progressBar{w: f, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (b *progressBar) update(p download.Progress) {
	if b.tty {
		fmt.Fprintf(b.w, "\r%s\x1b[K", formatProgress(p, 24))
		b.drawn = true
		return
	}
	if p.File != b.file {
		b.file = p.File
		fmt.Fprintf(b.w, "fetching %s (%s of %s done)\n", p.File, download.FormatBytes(p.Done), download.FormatBytes(p.Total))
	}
}

func (b *progressBar) finish() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}

// formatProgress renders p as "[=====>      ]  41%  1.2 GiB / 2.9 GiB  12.5 MiB/s  ETA 2:21".
func formatProgress(p download.Progress, width int) string {
	frac := min(max(p.Fraction(), 0), 1)
	full := int(frac * float64(width))
	bar := strings.Repeat("=", full)
	if full < width {
		bar += ">" + strings.Repeat(" ", width-full-1)
	}
	rate, eta := "  --", "--:--"
	if p.Rate > 0 {
		rate = download.FormatBytes(int64(p.Rate)) + "/s"
		eta = formatETA(p.ETA)
	}
	return fmt.Sprintf("[%s] %3.0f%%  %s / %s  %s  ETA %s", bar, frac*100,
		download.FormatBytes(p.Done), download.FormatBytes(p.Total), rate, eta)
}

// formatETA writes d as m:ss, or h:mm:ss from an hour on.
func formatETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
