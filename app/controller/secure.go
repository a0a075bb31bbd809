package controller

import (
	"strings"
	"unicode"
)

// credentialWords are words that, in any of a field's self-descriptions, mark it as holding a
// secret. Whole words only, so "compass" or "spinner" do not match.
var credentialWords = map[string]bool{
	"password": true, "passwd": true, "pwd": true, "passcode": true, "passphrase": true,
	"pin": true, "otp": true, "totp": true, "hotp": true, "2fa": true, "mfa": true,
	"cvv": true, "cvc": true, "cvv2": true, "csc": true, "ssn": true, "secret": true,
	"iban": true, "creditcard": true,
}

// credentialPhrases are word sequences with the same meaning.
var credentialPhrases = [][]string{
	{"one", "time"}, {"security", "code"}, {"verification", "code"}, {"auth", "code"},
	{"card", "number"}, {"credit", "card"}, {"cc", "number"}, {"cc", "csc"}, {"social", "security"},
	{"pass", "word"}, {"private", "key"}, {"api", "key"}, {"access", "token"},
}

// refusal says why the controller will not read a field, or "" when it may.
func refusal(f FieldInfo) string {
	if f.Role == "AXSecureTextField" || f.Subrole == "AXSecureTextField" {
		return "secure text field"
	}
	for _, s := range []string{f.Identifier, f.Placeholder, f.Title, f.Description, f.Subrole} {
		if w := credentialMatch(s); w != "" {
			return "field looks like a credential (" + w + ")"
		}
	}
	return ""
}

// credentialMatch returns the credential word or phrase s contains, or "".
func credentialMatch(s string) string {
	words := splitWords(s)
	for _, w := range words {
		if credentialWords[w] {
			return w
		}
		// Glued forms such as "newpassword" or "userPasscode2".
		for _, stem := range []string{"password", "passwd", "passcode", "passphrase"} {
			if strings.Contains(w, stem) {
				return stem
			}
		}
	}
	for _, p := range credentialPhrases {
		for i := 0; i+len(p) <= len(words); i++ {
			match := true
			for j := range p {
				if words[i+j] != p[j] {
					match = false
					break
				}
			}
			if match {
				return strings.Join(p, " ")
			}
		}
	}
	return ""
}

// splitWords lower-cases s and splits it at non-alphanumerics and camelCase boundaries:
// "userOTPCode" → user, otp, code; "cc-number" → cc, number.
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && len(cur) > 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}
