package controller

import "strings"

// Ghost-text size bounds, in points, when only the caret's height suggests a size.
const minGhostFont, maxGhostFont = 10, 32

// Font is the font the overlay draws ghost text in.
type Font struct {
	Name string // a font to look up by name; "" means a system font
	Mono bool   // with Name "": the monospaced system font
	Size float64
}

// GhostFont picks the overlay's font for the host's style and a caret caretH points high.
// Accessibility reports system fonts by private names that start with "." (.AppleSystemUIFont,
// .SFNS-Regular, .AppleSystemUIFontMonospaced-Regular); NSFont's lookup by name returns Times
// for those, so they become the system font, monospaced when the name says so.
func GhostFont(s Style, caretH float64) Font {
	size := s.FontSize
	if size <= 0 {
		size = min(max(caretH*0.8, minGhostFont), maxGhostFont)
	}
	f := Font{Name: s.FontName, Size: size}
	if strings.HasPrefix(f.Name, ".") {
		f.Mono = strings.Contains(strings.ToLower(f.Name), "mono")
		f.Name = ""
	}
	return f
}
