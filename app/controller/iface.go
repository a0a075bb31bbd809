// Package controller is the whole behaviour of the Laya app, independent of macOS: when to read
// the focused text field, what to send to the engine, when a suggestion is shown, accepted,
// dismissed or thrown away as stale, and which fields are never read. The darwin adapters
// (Accessibility, event tap, overlay panel, insertion) implement its small interfaces, and tests
// drive it with fakes.
package controller

import (
	"context"
	"time"
)

// Range is a span of a text field in UTF-16 code units, the unit the Accessibility API uses.
type Range struct{ Loc, Len int }

// Rect is a screen rectangle in Cocoa coordinates (points, origin at the bottom-left of the
// primary screen, y up).
type Rect struct{ X, Y, W, H float64 }

// Style is the host field's text style where the app reports it; zero values mean unknown.
type Style struct {
	FontName string
	FontSize float64
}

// FieldInfo describes a focused element: who owns it and what it says about itself, which is
// what the secure-field rules look at.
type FieldInfo struct {
	App         string // bundle id of the owning app
	ID          uint64 // equal IDs denote the same element
	Role        string // e.g. AXTextField, AXTextArea, AXSecureTextField
	Subrole     string
	Identifier  string // AXIdentifier; for web content often the input's id or name
	Placeholder string
	Title       string
	Description string
	Style       Style
}

// Element is the focused text element. Offsets are UTF-16 code units.
type Element interface {
	Info() FieldInfo
	// Selection returns the selected range; a caret is a zero-length range.
	Selection() (Range, error)
	// Length returns the length of the element's whole text.
	Length() (int, error)
	// Text returns the UTF-16 units of r, which lies within [0, Length()].
	Text(r Range) ([]uint16, error)
	// Bounds returns the screen rectangle of r; for a zero-length r, the caret.
	Bounds(r Range) (Rect, error)
	// SetSelectedText replaces the selection with text through the element itself
	// (kAXSelectedTextAttribute). Success means the app took the request; some apps (Chromium,
	// Electron) apply it a moment later, so the caller polls Selection and Length to see it.
	SetSelectedText(text string) error
	// Close releases the element.
	Close()
}

// FocusedField reads what has keyboard focus.
type FocusedField interface {
	// Focus returns the focused element, or an error when there is none or it cannot be read.
	Focus() (Element, error)
	// SecureInput reports whether some app has secure event input on (a password prompt).
	SecureInput() bool
	// Composing reports whether an input method may be composing text (Japanese, Chinese,
	// Korean input): its marked text is not yet text, so Laya neither reads the field nor
	// shows a suggestion, which would cover the candidate window.
	Composing() bool
}

// Overlay shows ghost text. Its methods are called with the controller's lock held, so they
// must return at once (hand the work to the main thread, never wait for it).
type Overlay interface {
	Show(text string, at Rect, style Style)
	Hide()
}

// Keyboard is how accepted text gets into an element that refuses SetSelectedText. Its methods
// run on the controller's worker goroutine, never on the event tap's thread.
type Keyboard interface {
	// Type posts text as key presses. The controller passes at most TypeChunk UTF-16 units at
	// a time, never a line break (a Return key sends chat messages and re-indents in editors),
	// and pauses between chunks so that busy apps neither drop nor reorder them.
	Type(text string) error
	// Paste puts text on the pasteboard as a transient item and presses Cmd+V. restore puts the
	// user's clipboard back; the controller calls it once the paste has landed (or it gives
	// up waiting), and only when err is nil.
	Paste(text string) (restore func(), err error)
}

// Request is what the controller asks the engine for.
type Request struct {
	Prefix, Suffix string // text before and after the caret
	App            string // bundle id, so the engine can pick a prompt style
	MaxTokens      int
	Temperature    float32
	TopK           int
	TopP           float32
}

// Engine completes text. Complete calls onText with each piece of the suggestion as it is
// generated (the pieces form a prefix of the returned text, which may still come back "" when
// the engine drops an unsure suggestion), and returns promptly once ctx is canceled. The
// suggestion is inserted as it is: fitting it to the caret (no blank the prefix already ends
// with, nothing of the text after the caret repeated) is the engine's job, as package complete
// does it.
type Engine interface {
	Complete(ctx context.Context, r Request, onText func(piece string)) (string, error)
}

// Timer is a pending Clock.AfterFunc.
type Timer interface{ Stop() bool }

// Clock is time, replaceable in tests.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
