package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Layout names what goes into the bundle. Paths are relative to the repository root.
type Layout struct {
	Exe        string // the darwin executable
	InfoPlist  string
	StatusIcon string
	AppIcon    string // a square PNG of at least 1024 pixels
	Model      string // the bundled model directory; skipped when absent
	Version    string // CFBundleShortVersionString
	Build      string // CFBundleVersion
}

// Assemble writes the app bundle app from l, replacing any earlier one:
//
//	Contents/MacOS/Laya
//	Contents/Info.plist                (versions set)
//	Contents/Resources/StatusIcon.png
//	Contents/Resources/AppIcon.icns
//	Contents/Resources/models/<model>/
func Assemble(l Layout, app string) error {
	plist, err := os.ReadFile(l.InfoPlist)
	if err != nil {
		return err
	}
	for key, v := range map[string]string{"CFBundleShortVersionString": l.Version, "CFBundleVersion": l.Build} {
		if plist, err = setPlistString(plist, key, v); err != nil {
			return fmt.Errorf("%s: %w", l.InfoPlist, err)
		}
	}
	icns, err := appIcon(l.AppIcon)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(app); err != nil {
		return err
	}
	contents := filepath.Join(app, "Contents")
	res := filepath.Join(contents, "Resources")
	for _, d := range []string{filepath.Join(contents, "MacOS"), filepath.Join(res, "models")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := copyFile(l.Exe, filepath.Join(contents, "MacOS", "Laya"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(contents, "Info.plist"), plist, 0o644); err != nil {
		return err
	}
	if err := copyFile(l.StatusIcon, filepath.Join(res, "StatusIcon.png"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(res, "AppIcon.icns"), icns, 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(l.Model); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return copyTree(l.Model, filepath.Join(res, "models", filepath.Base(l.Model)))
}

// setPlistString sets the string value of key in the top-level dictionary of an XML property list.
func setPlistString(plist []byte, key, value string) ([]byte, error) {
	re := regexp.MustCompile(`(<key>` + regexp.QuoteMeta(key) + `</key>\s*<string>)[^<]*(</string>)`)
	all := re.FindAllSubmatchIndex(plist, -1)
	if len(all) != 1 {
		return nil, fmt.Errorf("%d string values for %s, want 1", len(all), key)
	}
	loc := all[0]
	var esc bytes.Buffer
	if err := xml.EscapeText(&esc, []byte(value)); err != nil {
		return nil, err
	}
	out := append([]byte{}, plist[:loc[3]]...)
	out = append(out, esc.Bytes()...)
	return append(out, plist[loc[4]:]...), nil
}

// iconSizes are the icns element types of Apple's icon sizes and their pixel sizes: every size of
// an .iconset (16 to 512 points at 1x and 2x), as iconutil packs them, each as a PNG.
var iconSizes = []struct {
	typ  string
	size int
}{
	{"icp4", 16}, {"ic11", 32}, {"icp5", 32}, {"ic12", 64},
	{"ic07", 128}, {"ic13", 256}, {"ic08", 256}, {"ic14", 512},
	{"ic09", 512}, {"ic10", 1024},
}

// appIcon makes an .icns file out of a square PNG.
func appIcon(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.Width != cfg.Height || cfg.Width < 1024 || cfg.Width > 8192 {
		return nil, fmt.Errorf("%s: %dx%d, want a square of 1024 to 8192 pixels", name, cfg.Width, cfg.Height)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	src := image.NewRGBA(img.Bounds())
	draw.Draw(src, src.Rect, img, img.Bounds().Min, draw.Src)

	var body bytes.Buffer
	for _, s := range iconSizes {
		var p bytes.Buffer
		if err := png.Encode(&p, shrink(src, s.size)); err != nil {
			return nil, err
		}
		body.WriteString(s.typ)
		binary.Write(&body, binary.BigEndian, uint32(8+p.Len()))
		body.Write(p.Bytes())
	}
	var out bytes.Buffer
	out.WriteString("icns")
	binary.Write(&out, binary.BigEndian, uint32(8+body.Len()))
	out.Write(body.Bytes())
	return out.Bytes(), nil
}

// shrink scales src down to an n×n image, each output pixel the area-weighted mean of the source
// pixels it covers. The means are taken over premultiplied colour, so transparent pixels do not
// darken the edges.
func shrink(src *image.RGBA, n int) *image.RGBA {
	w := src.Rect.Dx()
	dst := image.NewRGBA(image.Rect(0, 0, n, n))
	// Source pixel i covers output coordinates [i*n, (i+1)*n) in units of 1/w output pixel.
	for oy := range n {
		for ox := range n {
			var acc [4]uint64
			var area uint64
			for sy := oy * w / n; sy < ((oy+1)*w+n-1)/n; sy++ {
				wy := overlap(sy*n, (sy+1)*n, oy*w, (oy+1)*w)
				for sx := ox * w / n; sx < ((ox+1)*w+n-1)/n; sx++ {
					wt := uint64(wy * overlap(sx*n, (sx+1)*n, ox*w, (ox+1)*w))
					p := src.Pix[src.PixOffset(src.Rect.Min.X+sx, src.Rect.Min.Y+sy):]
					for c := range acc {
						acc[c] += wt * uint64(p[c])
					}
					area += wt
				}
			}
			q := dst.Pix[dst.PixOffset(ox, oy):]
			for c := range acc {
				q[c] = uint8((acc[c] + area/2) / area)
			}
		}
	}
	return dst
}

// overlap is the length of the intersection of [a0, a1) and [b0, b1).
func overlap(a0, a1, b0, b1 int) int {
	return max(0, min(a1, b1)-max(a0, b0))
}

func copyFile(from, to string, mode fs.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, mode)
}

// copyTree copies the regular files and directories under from to to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, dst, 0o644)
		}
		return fmt.Errorf("%s: not a regular file or directory", path)
	})
}

// Zip writes the bundle app into the zip file name with the bundle's directory at its top, as
// Finder's Compress makes it, keeping the executable bit.
func Zip(app, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	parent := filepath.Dir(app)
	err = filepath.WalkDir(app, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(parent, path)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
			_, err = zw.CreateHeader(h)
			return err
		}
		h.Method = zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
