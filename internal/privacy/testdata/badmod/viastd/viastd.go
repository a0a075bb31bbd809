// Package viastd imports a standard package whose purpose is connecting: a violation.
package viastd

import "net/smtp"

// Mail sends mail.
func Mail() error { return smtp.SendMail("example.invalid:25", nil, "a", nil, nil) }
