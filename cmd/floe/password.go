package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Passwords never come from the command line, where ps and a node's
// /debug/pprof/cmdline would show them: they come from FLOE_PASSWORD, from
// a file (--password-file), or from a prompt on the terminal.

// passwordEnv is the environment variable a password may come from.
const passwordEnv = "FLOE_PASSWORD"

// errNoPassword: a password is needed and there is no way to get one.
var errNoPassword = errors.New("no password: set FLOE_PASSWORD, give --password-file, or run on a terminal to be asked")

// password returns the password from FLOE_PASSWORD, then file, then a
// prompt on the terminal (what says what the password is for).
func password(file, what string) (string, error) {
	if p := os.Getenv(passwordEnv); p != "" {
		return p, nil
	}
	if file != "" {
		return readPasswordFile(file)
	}
	return promptPassword(what)
}

// readPasswordFile reads a password file: its first line.
func readPasswordFile(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("password file %s: %w", file, err)
	}
	p := strings.TrimRight(line, "\r\n")
	if p == "" {
		return "", fmt.Errorf("password file %s is empty", file)
	}
	return p, nil
}

// promptPassword asks for a password on the terminal, without echo.
func promptPassword(what string) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", errNoPassword
	}
	defer tty.Close()
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", errNoPassword
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", errNoPassword
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprintf(tty, "%s: ", what)
	line, err := bufio.NewReader(tty).ReadString('\n')
	fmt.Fprintln(tty)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// readSecretFile reads a secret from a file named by flag: its first line.
func readSecretFile(file, flag string) (string, error) {
	s, err := readPasswordFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return s, nil
}
