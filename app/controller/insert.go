package controller

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
)

// Insertion limits.
const (
	// TypeChunk is the most UTF-16 units typed as one key event: apps drop the tail of longer
	// unicode strings.
	TypeChunk = 20
	// typeGap separates typed chunks so that busy apps neither drop nor reorder them.
	typeGap = 1500 * time.Microsecond
	// maxTyped is the longest text typed; longer text is pasted, because typing it visibly
	// lags.
	maxTyped = 400
	// Chromium and Electron report a set of kAXSelectedText as done at once and apply it a
	// moment later in the renderer; a paste lands whenever the app handles Cmd+V. The worker
	// polls the field this often, this many times, before it gives up waiting.
	pollGap    = 10 * time.Millisecond
	setPolls   = 20 // 200 ms
	pastePolls = 50 // 500 ms
)

// insertText puts text at the caret of el, on the worker. It returns how it did so. The order
// is: the element's own SetSelectedText (a set the app accepted is never followed by typing,
// which would insert the text twice); else typing, in chunks, for a single line; else the
// pasteboard, for line breaks (a typed Return sends messages and re-indents code) and long
// text.
func (c *Controller) insertText(el Element, text string) (string, error) {
	// Without a readable caret (a read timed out) nothing can be confirmed, but the text still
	// goes in, the same way.
	sel, serr := el.Selection()
	before, lerr := el.Length()
	known := serr == nil && lerr == nil
	units := utf16Len(text)
	if el.SetSelectedText(text) == nil {
		if known && c.landed(el, sel, before, units, setPolls) {
			return "set", nil
		}
		return "set, unconfirmed after 200 ms", nil
	}
	if !strings.ContainsAny(text, "\r\n") && units <= maxTyped {
		for i, chunk := range typeChunks(text) {
			if i > 0 {
				c.d.Sleep(typeGap)
			}
			if err := c.d.Keys.Type(chunk); err != nil {
				return "", fmt.Errorf("insert: typing: %w", err)
			}
		}
		return "typed", nil
	}
	restore, err := c.d.Keys.Paste(text)
	if err != nil {
		return "", fmt.Errorf("insert: paste: %w", err)
	}
	// The user's clipboard comes back only once the app has read ours, or it would paste
	// theirs.
	ok := known && c.landed(el, sel, before, units, pastePolls)
	if !known {
		c.d.Sleep(pastePolls * pollGap)
	}
	restore()
	if !ok {
		return "pasted, unconfirmed", nil
	}
	return "pasted", nil
}

// landed polls el until the caret sits right after units new units at sel, or gives up after
// polls reads.
func (c *Controller) landed(el Element, sel Range, before, units, polls int) bool {
	want := sel.Loc + units
	for i := 0; i < polls; i++ {
		if i > 0 {
			c.d.Sleep(pollGap)
		}
		s, err := el.Selection()
		if err != nil || s != (Range{want, 0}) {
			continue
		}
		if n, err := el.Length(); err == nil && n == before-sel.Len+units {
			return true
		}
	}
	return false
}

// typeChunks splits single-line text into pieces of at most TypeChunk UTF-16 units, never
// between the halves of a surrogate pair.
func typeChunks(text string) []string {
	var out []string
	start, n := 0, 0
	for i, r := range text {
		w := utf16.RuneLen(r)
		if n+w > TypeChunk {
			out = append(out, text[start:i])
			start, n = i, 0
		}
		n += w
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}
