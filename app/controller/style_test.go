package controller

import "testing"

func TestGhostFont(t *testing.T) {
	for _, c := range []struct {
		in     Style
		caretH float64
		want   Font
	}{
		{Style{FontName: "Menlo-Regular", FontSize: 12}, 16, Font{Name: "Menlo-Regular", Size: 12}},
		{Style{FontName: ".AppleSystemUIFont", FontSize: 13}, 16, Font{Size: 13}},
		{Style{FontName: ".SFNS-Regular", FontSize: 14}, 16, Font{Size: 14}},
		{Style{FontName: ".AppleSystemUIFontMonospaced-Regular", FontSize: 11}, 16, Font{Mono: true, Size: 11}},
		{Style{FontName: ".SFNSMono-Regular", FontSize: 11}, 16, Font{Mono: true, Size: 11}},
		{Style{}, 20, Font{Size: 16}},
		{Style{}, 5, Font{Size: minGhostFont}},
		{Style{}, 100, Font{Size: maxGhostFont}},
	} {
		if got := GhostFont(c.in, c.caretH); got != c.want {
			t.Errorf("GhostFont(%+v, %v) = %+v, want %+v", c.in, c.caretH, got, c.want)
		}
	}
}
