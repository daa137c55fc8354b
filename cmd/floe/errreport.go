package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	exitFailed = 1 // the command failed (lookup: a key was absent)
	exitUsage  = 2 // a usage mistake: the command line, or input it names
	// exitNoVerdict: floe chaos run's harness failed, so no verdict was
	// reached (a broken promise is exitFailed).
	exitNoVerdict = 3
)

// errorCodes name the CLI's and the libraries' error classes in a JSON
// error's "code", first match wins. A usage mistake is "USAGE", a server's
// typed error its wire code's name (transport.Error) and anything else
// "FAILED".
var errorCodes = []struct {
	err  error
	code string
}{
	{errNotFound, "NOT_FOUND"},
	{errUnhealthy, "NOT_READY"},
	{errPromiseBroken, "PROMISE_BROKEN"},
	{client.ErrOutcomeUnknown, "OUTCOME_UNKNOWN"},
	{client.ErrDeliveryTimeout, "DELIVERY_TIMEOUT"},
	{client.ErrNoLeader, "NO_LEADER"},
	{client.ErrRowTooLarge, "ROW_TOO_LARGE"},
	{client.ErrTableChanged, "TABLE_CHANGED"},
	{client.ErrNotLogTable, "NOT_LOG_TABLE"},
	{client.ErrNotPrimaryKeyTable, "NOT_PRIMARY_KEY_TABLE"},
	{client.ErrNotTargetColumn, "NOT_TARGET_COLUMN"},
	{client.ErrNoPrefixLookup, "NO_PREFIX_LOOKUP"},
	{client.ErrPrefixTruncated, "PREFIX_TRUNCATED"},
	{record.ErrInvalidSchema, "INVALID_SCHEMA"},
	{record.ErrInvalidJSON, "INVALID_JSON"},
	{record.ErrUnknownColumn, "UNKNOWN_COLUMN"},
	{record.ErrDuplicateColumn, "DUPLICATE_COLUMN"},
	{record.ErrWrongType, "WRONG_TYPE"},
	{record.ErrNullNotAllowed, "NULL_NOT_ALLOWED"},
	{record.ErrOverflow, "VALUE_OUT_OF_RANGE"},
	{record.ErrInvalidUTF8, "INVALID_UTF8"},
	{record.ErrInvalidValue, "INVALID_VALUE"},
	{context.DeadlineExceeded, "TIMEOUT"},
	{context.Canceled, "CANCELED"},
}

// errorCode is the code of err in a JSON error: "NOT_FOUND", "UNKNOWN_TABLE".
func errorCode(err error) string {
	if errors.Is(err, errUsage) {
		return "USAGE" // before a server's code it may wrap
	}
	var wire *transport.Error
	if errors.As(err, &wire) {
		return strings.TrimPrefix(wire.Code.String(), "ERROR_CODE_")
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "FAILED"
}

// exitStatus is the exit status of a command that failed with err.
func exitStatus(err error) int {
	switch {
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errNoVerdict):
		return exitNoVerdict
	}
	return exitFailed
}

// jsonError is an error as a command run with --output json reports it, one
// object on stderr.
type jsonError struct {
	Command string `json:"command"`
	Error   string `json:"error"`
	Code    string `json:"code"`
	Exit    int    `json:"exit"`
	// Usage is the command's usage line, for a usage mistake.
	Usage string `json:"usage,omitempty"`
}

// reportError prints err for cmd on stderr, as a line (and the usage line
// after a usage mistake) or, under --output json, as a jsonError, and
// returns the exit status.
func reportError(env *cliEnv, cmd *cobra.Command, err error) int {
	msg := cliMessage(err)
	// "floe recover: recover: ..." says the command twice.
	msg = strings.TrimPrefix(msg, cmd.Name()+": ")
	status := exitStatus(err)
	if wantsJSON(cmd) {
		e := jsonError{Command: cmd.CommandPath(), Error: msg, Code: errorCode(err), Exit: status}
		if status == exitUsage {
			e.Usage = cmd.UseLine()
		}
		line, _ := json.Marshal(e)
		fmt.Fprintf(env.stderr, "%s\n", line)
		return status
	}
	fmt.Fprintf(env.stderr, "%s: %s\n", cmd.CommandPath(), msg)
	if status == exitUsage {
		fmt.Fprintf(env.stderr, "Usage: %s (`%s -h` for help)\n", cmd.UseLine(), cmd.CommandPath())
	}
	return status
}

// wantsJSON reports whether cmd was asked for JSON output: by --output, or
// by FLOE_OUTPUT for a client command that failed before it read the
// variable.
func wantsJSON(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("output")
	if f == nil {
		return false
	}
	if f.Changed || cmd.Annotations[clientAnnotation] == "" {
		return f.Value.String() == "json"
	}
	return f.Value.String() == "json" || os.Getenv(envName("output")) == "json"
}
