package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../../../"

func TestSetPlistString(t *testing.T) {
	in := []byte("<dict>\n\t<key>CFBundleVersion</key>\n\t<string>1</string>\n\t<key>Other</key>\n\t<string>1</string>\n</dict>")
	got, err := setPlistString(in, "CFBundleVersion", "2 & <3>")
	if err != nil {
		t.Fatal(err)
	}
	want := "<dict>\n\t<key>CFBundleVersion</key>\n\t<string>2 &amp; &lt;3&gt;</string>\n\t<key>Other</key>\n\t<string>1</string>\n</dict>"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := setPlistString(in, "Missing", "x"); err == nil {
		t.Error("a missing key gave no error")
	}
	twice := append(append([]byte{}, in...), in...)
	if _, err := setPlistString(twice, "CFBundleVersion", "x"); err == nil {
		t.Error("a key given twice gave no error")
	}
}

func TestShrink(t *testing.T) {
	// 3 pixels into 2: the first output pixel is source pixel 0 and half of pixel 1 (weights 2:1),
	// the second half of pixel 1 and pixel 2 (1:2).
	src := image.NewRGBA(image.Rect(0, 0, 3, 3))
	for y := range 3 {
		src.SetRGBA(0, y, color.RGBA{255, 0, 0, 255})
		src.SetRGBA(1, y, color.RGBA{0, 0, 0, 0})
		src.SetRGBA(2, y, color.RGBA{0, 0, 90, 90})
	}
	got := shrink(src, 2)
	for y := range 2 {
		// (2*255 + 1*0)/3 = 170 red and alpha; (1*0 + 2*90)/3 = 60 blue and alpha.
		if c := got.RGBAAt(0, y); c != (color.RGBA{170, 0, 0, 170}) {
			t.Errorf("(0,%d) = %v", y, c)
		}
		if c := got.RGBAAt(1, y); c != (color.RGBA{0, 0, 60, 60}) {
			t.Errorf("(1,%d) = %v", y, c)
		}
	}
	same := shrink(src, 3)
	if !bytes.Equal(same.Pix, src.Pix) {
		t.Error("shrinking to the same size changed pixels")
	}
}

func TestAppIcon(t *testing.T) {
	icns, err := appIcon(root + "assets/icons/AppIcon.png")
	if err != nil {
		t.Fatal(err)
	}
	if string(icns[:4]) != "icns" || int(binary.BigEndian.Uint32(icns[4:])) != len(icns) {
		t.Fatalf("header %q %d for %d bytes", icns[:4], binary.BigEndian.Uint32(icns[4:]), len(icns))
	}
	var n int
	for b := icns[8:]; len(b) > 0; n++ {
		if len(b) < 8 || n >= len(iconSizes) {
			t.Fatalf("element %d: %d bytes left", n, len(b))
		}
		typ, size := string(b[:4]), int(binary.BigEndian.Uint32(b[4:]))
		if typ != iconSizes[n].typ || size < 8 || size > len(b) {
			t.Fatalf("element %d: %q of %d bytes", n, typ, size)
		}
		img, err := png.Decode(bytes.NewReader(b[8:size]))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if s := iconSizes[n].size; img.Bounds() != image.Rect(0, 0, s, s) {
			t.Errorf("%s: %v, want %dx%d", typ, img.Bounds(), s, s)
		}
		// The icon's centre is the purple of its background at every size; its corners are clear.
		s := img.Bounds().Dx()
		if r, g, b, a := img.At(s*3/4, s*3/4).RGBA(); a>>8 != 255 || b>>8 < 150 || g>>8 > 100 || r>>8 < 80 {
			t.Errorf("%s: lower right inner pixel %v", typ, img.At(s*3/4, s*3/4))
		}
		if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
			t.Errorf("%s: corner alpha %d", typ, a)
		}
		b = b[size:]
	}
	if n != len(iconSizes) {
		t.Errorf("%d elements, want %d", n, len(iconSizes))
	}
	if _, err := appIcon(root + "assets/icons/StatusIcon.png"); err == nil || !strings.Contains(err.Error(), "want a square") {
		t.Errorf("a 36-pixel icon: %v", err)
	}
}

func TestAssembleAndZip(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	if err := os.WriteFile(exe, []byte("executable"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "laya-code")
	if err := os.MkdirAll(filepath.Join(model, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "sub/x"} {
		if err := os.WriteFile(filepath.Join(model, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := Layout{
		Exe:        exe,
		InfoPlist:  root + "Info.plist",
		StatusIcon: root + "assets/icons/StatusIcon.png",
		AppIcon:    root + "assets/icons/AppIcon.png",
		Model:      model,
		Version:    "9.8.7",
		Build:      "654",
	}
	app := filepath.Join(dir, "Laya.app")
	// A file left from an earlier bundle must go.
	if err := os.MkdirAll(filepath.Join(app, "Contents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "Contents", "stale"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Assemble(l, app); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		"Laya.app/":                                                0,
		"Laya.app/Contents/":                                       0,
		"Laya.app/Contents/Info.plist":                             0o644,
		"Laya.app/Contents/MacOS/":                                 0,
		"Laya.app/Contents/MacOS/Laya":                             0o755,
		"Laya.app/Contents/Resources/":                             0,
		"Laya.app/Contents/Resources/AppIcon.icns":                 0o644,
		"Laya.app/Contents/Resources/StatusIcon.png":               0o644,
		"Laya.app/Contents/Resources/models/":                      0,
		"Laya.app/Contents/Resources/models/laya-code/":            0,
		"Laya.app/Contents/Resources/models/laya-code/sub/":        0,
		"Laya.app/Contents/Resources/models/laya-code/sub/x":       0o644,
		"Laya.app/Contents/Resources/models/laya-code/config.json": 0o644,
	}
	zipName := filepath.Join(dir, "out", "Laya-arm64.zip")
	if err := os.MkdirAll(filepath.Dir(zipName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Zip(app, zipName); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(zipName)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
		perm, ok := want[f.Name]
		switch {
		case !ok:
			t.Errorf("unexpected %s", f.Name)
		case perm == 0 && !f.Mode().IsDir():
			t.Errorf("%s: mode %v, want a directory", f.Name, f.Mode())
		case perm != 0 && f.Mode() != perm:
			t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), perm)
		}
	}
	if len(files) != len(want) {
		t.Errorf("%d entries, want %d", len(files), len(want))
	}
	read := func(name string) string {
		f := files[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got := read("Laya.app/Contents/MacOS/Laya"); got != "executable" {
		t.Errorf("executable %q", got)
	}
	plist := read("Laya.app/Contents/Info.plist")
	for _, s := range []string{"<string>9.8.7</string>", "<string>654</string>", "<string>Laya</string>"} {
		if !strings.Contains(plist, s) {
			t.Errorf("Info.plist lacks %s", s)
		}
	}
	if got := read("Laya.app/Contents/Resources/models/laya-code/sub/x"); got != "sub/x" {
		t.Errorf("model file %q", got)
	}
}
