package menu

import (
	"strings"
	"testing"

	"github.com/layaapp/laya/models"
)

var bundled = Installed{Name: "laya-code (built in)", Path: ""}

// firstRunOffers is a catalog with a recommended prose model, another prose model and a coder.
func firstRunOffers() []Offer {
	return []Offer{
		{ID: "coder-4bit", Name: "Coder", SizeMB: 870, Code: true},
		{ID: "prose-0.8b-4bit", Name: "Prose 0.8B", SizeMB: 410, Recommended: true},
		{ID: "big-gguf", Name: "Big", SizeMB: 3300},
	}
}

func sameTitles(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s %q, want %q", what, got, want)
	}
}

func TestRecommendedOnlyBundled(t *testing.T) {
	for _, installed := range [][]Installed{
		{bundled},
		nil, // a build without the bundled model has no prose model either
		// A catalog code model, also as a GGUF file in its directory, leaves prose uncovered.
		{bundled, {Name: "coder-4bit", Path: "/m/coder-4bit"}},
		{bundled, {Name: "Coder", Path: "/m/Coder"}},
	} {
		s := State{Installed: installed, Offers: firstRunOffers()}
		o, ok := Recommended(s)
		if !ok || o.ID != "prose-0.8b-4bit" {
			t.Errorf("installed %v: Recommended = %+v, %v; want the recommended prose model", installed, o, ok)
			continue
		}
		models := find(t, Build(s), "Models").Submenu
		var want []string
		for _, m := range installed {
			want = append(want, m.Name)
		}
		if len(want) > 0 {
			want = append(want, "---")
		}
		want = append(want, "Download Prose 0.8B (410 MB) — recommended for prose", "Download Big (3.2 GB)…")
		if len(installed) < 2 {
			want = append(want, "Download Coder (870 MB)…")
		}
		sameTitles(t, "models", titles(models), want)
		// The recommended item runs the ordinary download action, found by its stable ID.
		id := Item{Action: Download, Arg: "prose-0.8b-4bit"}.ID()
		if it, ok := Find(Build(s), id); !ok || !strings.HasSuffix(it.Title, "recommended for prose") || !it.Enabled {
			t.Errorf("installed %v: item %q = %+v, %v", installed, id, it, ok)
		}

		p, ok := FirstRun(s)
		if !ok || p.Button.ID() != id || p.Button.Title != "Download (410 MB)" || !p.Button.Enabled {
			t.Errorf("installed %v: FirstRun = %+v, %v", installed, p, ok)
		}
		if !strings.Contains(p.Text, "Prose 0.8B (410 MB)") {
			t.Errorf("onboarding text %q names neither the model nor its size", p.Text)
		}
	}
}

func TestRecommendedNotOffered(t *testing.T) {
	for _, c := range []struct {
		why string
		s   State
	}{
		{"the recommended model installed", State{Installed: []Installed{bundled, {Name: "prose-0.8b-4bit", Path: "/m/prose-0.8b-4bit"}}}},
		{"another catalog prose model installed", State{Installed: []Installed{bundled, {Name: "big-gguf/big-q4_k_m.gguf", Path: "/m/big-gguf/big-q4_k_m.gguf"}}}},
		{"a model of the user's own installed", State{Installed: []Installed{bundled, {Name: "my-model", Path: "/m/my-model"}}}},
		{"a model outside the models directory configured", State{Installed: []Installed{bundled}, Current: "/elsewhere/model"}},
	} {
		c.s.Offers = firstRunOffers()
		if o, ok := Recommended(c.s); ok {
			t.Errorf("%s: Recommended = %+v", c.why, o)
		}
		if p, ok := FirstRun(c.s); ok {
			t.Errorf("%s: FirstRun = %+v", c.why, p)
		}
		for _, it := range find(t, Build(c.s), "Models").Submenu {
			if strings.Contains(it.Title, "recommended") {
				t.Errorf("%s: menu item %q", c.why, it.Title)
			}
		}
	}
	// Without a recommended entry in the catalog there is nothing to offer.
	offers := firstRunOffers()
	offers[1].Recommended = false
	if o, ok := Recommended(State{Installed: []Installed{bundled}, Offers: offers}); ok {
		t.Errorf("catalog without a recommendation: Recommended = %+v", o)
	}
	// The recommended model installed is listed once, as a model to use, not to download.
	s := State{Installed: []Installed{bundled, {Name: "prose-0.8b-4bit", Path: "/m/prose-0.8b-4bit"}}, Offers: firstRunOffers()}
	sameTitles(t, "models", titles(find(t, Build(s), "Models").Submenu),
		[]string{"laya-code (built in)", "prose-0.8b-4bit", "---", "Download Big (3.2 GB)…", "Download Coder (870 MB)…"})
}

func TestRecommendedSizeFromCatalog(t *testing.T) {
	offers := firstRunOffers()
	offers[1].SizeMB = 1536
	s := State{Installed: []Installed{bundled}, Offers: offers}
	if it := find(t, Build(s), "Models").Submenu[2]; it.Title != "Download Prose 0.8B (1.5 GB) — recommended for prose" {
		t.Errorf("menu item %q", it.Title)
	}
	if p, _ := FirstRun(s); p.Button.Title != "Download (1.5 GB)" || !strings.Contains(p.Text, "(1.5 GB)") {
		t.Errorf("onboarding %+v", p)
	}
}

func TestRecommendedDownloadStates(t *testing.T) {
	s := State{Installed: []Installed{bundled}, Offers: firstRunOffers(),
		Downloads: map[string]Transfer{"prose-0.8b-4bit": {Fraction: 0.42}}}
	before := Build(s)
	// Still first while it downloads, so the click that started it finds its progress there.
	if it := find(t, before, "Models").Submenu[2]; it.Title != "Downloading Prose 0.8B… 42% — Cancel" || it.Action != CancelDownload || it.Arg != "prose-0.8b-4bit" {
		t.Errorf("running download %+v", it)
	}
	p, ok := FirstRun(s)
	if !ok || p.Button.Title != "Cancel Download (42%)" || p.Button.Action != CancelDownload || p.Button.Arg != "prose-0.8b-4bit" {
		t.Errorf("onboarding while downloading %+v, %v", p, ok)
	}
	s.Downloads = map[string]Transfer{"prose-0.8b-4bit": {Fraction: 0.9}}
	if !SameShape(before, Build(s)) {
		t.Error("download progress changed the menu's shape")
	}

	s.Downloads = map[string]Transfer{"prose-0.8b-4bit": {Err: "disk full"}}
	if it := find(t, Build(s), "Models").Submenu[2]; it.Title != "Download Prose 0.8B failed (disk full) — Retry" || it.Action != Download {
		t.Errorf("failed download %+v", it)
	}
	p, _ = FirstRun(s)
	if p.Button.Title != "Retry Download" || p.Button.Action != Download || !strings.Contains(p.Text, "disk full") {
		t.Errorf("onboarding after a failure %+v", p)
	}
}

// TestOffersFromCatalog: the shipped catalog's recommended model reaches a first run, with its
// catalog size, and its code models do not count as prose.
func TestOffersFromCatalog(t *testing.T) {
	c, err := models.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := c.Recommended()
	if !ok {
		t.Fatal("the catalog recommends no prose model")
	}
	offers := Offers(c)
	if len(offers) != len(c.Models) {
		t.Fatalf("%d offers for %d catalog models", len(offers), len(c.Models))
	}
	s := State{Installed: []Installed{bundled}, Offers: offers}
	o, ok := Recommended(s)
	if !ok || o.ID != rec.ID || o.SizeMB != rec.SizeMB || o.Code {
		t.Fatalf("Recommended = %+v, %v; catalog recommends %+v", o, ok, rec)
	}
	want := "Download " + rec.Name + " (" + sizeText(rec.SizeMB) + ") — recommended for prose"
	if it := find(t, Build(s), "Models").Submenu[2]; it.Title != want {
		t.Errorf("menu item %q, want %q", it.Title, want)
	}
	coder, ok := c.Lookup("qwen2.5-coder-1.5b-4bit")
	if !ok {
		t.Fatal("the catalog lost its coder")
	}
	s.Installed = append(s.Installed, Installed{Name: coder.ID, Path: "/m/" + coder.ID})
	if _, ok := Recommended(s); !ok {
		t.Error("an installed catalog code model counted as a prose model")
	}
}
