// Package pkgerr gives a library's errors two texts: Error, which names
// the package first ("client: no leader for bucket 3"), for logs and for
// code that reads errors whole; and Message, the same text without the
// package names of the errors in its chain ("no leader for bucket 3"), for
// a person at a terminal. The floe command prints Message.
//
// A package makes its sentinels with New and its wrapped errors with
// Errorf, where it would have written errors.New("pkg: ...") and
// fmt.Errorf("pkg: ...", ...); errors.Is and errors.As see through both.
// A typed error whose Error() builds its text (opening with its package's
// name) gives the text without it from a UserMessage() string method.
package pkgerr

import (
	"fmt"
	"strings"
)

// Error is an error of package Pkg: Msg, then the error it wraps, if any.
type Error struct {
	Pkg string
	Msg string
	Err error
}

// New returns an error of package pkg saying msg: a sentinel.
func New(pkg, msg string) error { return &Error{Pkg: pkg, Msg: msg} }

// Errorf returns an error of package pkg with fmt.Errorf's text (and
// wrapping, %w) of format and args.
func Errorf(pkg, format string, args ...any) error {
	return &Error{Pkg: pkg, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Pkg + ": " + e.own(e.text(e.Err)) }

// Unwrap returns the error e wraps.
func (e *Error) Unwrap() error { return e.Err }

// own joins e's message and the wrapped error's text.
func (e *Error) own(wrapped string) string {
	switch {
	case e.Err == nil:
		return e.Msg
	case e.Msg == "":
		return wrapped
	}
	return e.Msg + ": " + wrapped
}

func (e *Error) text(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// userMessager is a typed error whose Error() builds its text: its
// UserMessage is that text without the Go package names, for Message.
type userMessager interface{ UserMessage() string }

// Message is err's text without the package names of the *Error values in
// its chain. An error that wraps others (fmt.Errorf's %w, errors.Join) has
// each wrapped error's text, where its own text holds it, replaced by that
// error's Message; any other error says its Error().
func Message(err error) string {
	if err == nil {
		return ""
	}
	switch e := err.(type) {
	case *Error:
		return e.own(Message(e.Err))
	case userMessager:
		return e.UserMessage()
	}
	var wrapped []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if w := u.Unwrap(); w != nil {
			wrapped = []error{w}
		}
	case interface{ Unwrap() []error }:
		wrapped = u.Unwrap()
	}
	msg := err.Error()
	// From the last wrapped error back: fmt.Errorf and errors.Join write
	// them in order, so each one's text is found before (left of) the
	// ones after it.
	end := len(msg)
	for i := len(wrapped) - 1; i >= 0; i-- {
		if wrapped[i] == nil {
			continue
		}
		text := wrapped[i].Error()
		at := strings.LastIndex(msg[:end], text)
		if at < 0 {
			continue
		}
		msg = msg[:at] + Message(wrapped[i]) + msg[at+len(text):]
		end = at
	}
	return msg
}
