package controller

// NextWord returns the prefix of s that the accept-next-word key inserts (see nextWord), so
// that a simulated user (`laya replay`) decides word by word exactly as the controller accepts.
func NextWord(s string) string { return nextWord(s) }
