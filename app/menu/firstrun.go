package menu

import (
	"fmt"

	"github.com/layaapp/laya/models"
)

// Recommended returns the catalog's recommended prose model while the user has no prose model:
// every installed model is the bundled code model or a catalog code model, and none other is
// configured. A model the catalog does not know counts as prose, since the user chose it.
func Recommended(s State) (Offer, bool) {
	var rec Offer
	for _, o := range s.Offers {
		if o.Recommended {
			rec = o
			break
		}
	}
	if rec.ID == "" {
		return Offer{}, false
	}
	code := map[string]bool{"": true} // "" is the bundled model's path
	for _, m := range s.Installed {
		if m.Path == "" {
			continue
		}
		if o, ok := offerOf(s.Offers, m); !ok || !o.Code {
			return Offer{}, false
		}
		code[m.Path] = true
	}
	if !code[s.Current] {
		return Offer{}, false // a model outside the models directory, set in Preferences
	}
	return rec, true
}

// Prompt is the onboarding window's offer of the recommended prose model.
type Prompt struct {
	Text   string // why, with the model's name and download size
	Button Item   // the button's title and what clicking it does, as the menu's actions
}

// FirstRun returns the onboarding window's offer while Recommended has one. The button
// downloads the model, cancels the running download, or retries a failed one; the Models
// menu shows the same download.
func FirstRun(s State) (Prompt, bool) {
	o, ok := Recommended(s)
	if !ok {
		return Prompt{}, false
	}
	p := Prompt{
		Text: fmt.Sprintf("Laya comes with a small model for code. For emails, notes and other prose, "+
			"download the recommended %s (%s), then choose it in the Models menu.", o.Name, sizeText(o.SizeMB)),
		Button: Item{Title: fmt.Sprintf("Download (%s)", sizeText(o.SizeMB)), Action: Download, Arg: o.ID, Enabled: true},
	}
	switch d, active := s.Downloads[o.ID]; {
	case active && d.Err != "":
		p.Text += " The download failed: " + d.Err + "."
		p.Button.Title = "Retry Download"
	case active:
		p.Button = Item{Title: fmt.Sprintf("Cancel Download (%d%%)", int(d.Fraction*100)), Action: CancelDownload, Arg: o.ID, Enabled: true}
	}
	return p, true
}

// Offers lists the catalog's models as the menu offers them. The catalog's fill-in-the-middle
// models are its code models.
func Offers(c *models.Catalog) []Offer {
	offers := make([]Offer, 0, len(c.Models))
	for _, e := range c.Models {
		offers = append(offers, Offer{ID: e.ID, Name: e.Name, SizeMB: e.SizeMB, Recommended: e.Recommended, Code: e.FIM})
	}
	return offers
}
