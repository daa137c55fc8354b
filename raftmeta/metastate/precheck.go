package metastate

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Bounds of a proposed command, checked before it is proposed.
const (
	// MaxCommandBytes bounds an encoded command: every command is kept in
	// each voter's Raft log (raft.db) until a snapshot compacts it.
	MaxCommandBytes = 4 << 20
)

// Precheck decides, before a command is proposed, what applying it would
// answer when that depends on the command alone: a name no database or
// table can have, a schema or property list that cannot be valid, a node
// record that could not be registered, or a command too large to log. It
// returns that answer, or nil when the command must go through Raft. So a
// command that could only be refused never reaches the Raft log (a
// malformed request retried with a 15 MiB name grew raft.db by that much
// per try before). A command it passes may still be refused by Apply,
// whose checks stay the rule: Precheck only answers early what Apply
// would answer anyway, with the same codes where the state could not
// change the outcome.
func Precheck(cmd *pb.Command) *pb.CommandResult {
	refusal := precheck(cmd)
	if refusal == nil {
		return nil
	}
	if refusal.unchanged {
		return &pb.CommandResult{Unchanged: true}
	}
	return failedResult(0, refusal.err.Code, refusal.err.Msg)
}

// precheckOutcome is a decided command: refused with err, or unchanged.
type precheckOutcome struct {
	err       *Error
	unchanged bool
}

func refused(err *Error) *precheckOutcome { return &precheckOutcome{err: err} }

// refusedErr is refused for an error of the shared checks, which refuse
// with *Error.
func refusedErr(err error) *precheckOutcome {
	var e *Error
	if !errors.As(err, &e) {
		e = errorf(codeInvalidRequest, "%v", err)
	}
	return refused(e)
}

func precheck(cmd *pb.Command) *precheckOutcome {
	if n := proto.Size(cmd); n > MaxCommandBytes {
		return refused(errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "command of %d bytes over the %d-byte limit", n, MaxCommandBytes))
	}
	if n := len(cmd.GetRequestId()); n > MaxRequestIDBytes {
		return refused(errorf(codeInvalidRequest, "request id of %d bytes exceeds %d", n, MaxRequestIDBytes))
	}
	// A database or table with an invalid name never exists: the
	// answers below are those of Apply for a missing one.
	missingDatabase := func(name string, ifExists bool) *precheckOutcome {
		if ifExists {
			return &precheckOutcome{unchanged: true}
		}
		return refused(errorf(codeUnknownDatabase, "database %.256q does not exist", name))
	}
	switch op := cmd.GetOp().(type) {
	case *pb.Command_CreateDatabase:
		if name := op.CreateDatabase.GetName(); !validName(name) {
			return refused(errorf(codeInvalidRequest, "invalid database name %.256q: %s", name, nameRule))
		}
	case *pb.Command_DropDatabase:
		if c := op.DropDatabase; !validName(c.GetName()) {
			return missingDatabase(c.GetName(), c.GetIfExists())
		}
	case *pb.Command_CreateTable:
		return precheckCreateTable(op.CreateTable)
	case *pb.Command_DropTable:
		c := op.DropTable
		switch {
		case !validName(c.GetDatabase()):
			return missingDatabase(c.GetDatabase(), c.GetIfExists())
		case !validName(c.GetName()) && c.GetIfExists():
			return &precheckOutcome{unchanged: true}
		case !validName(c.GetName()):
			return refused(errorf(codeUnknownTable, "table %.256q does not exist", c.GetDatabase()+"."+c.GetName()))
		}
	case *pb.Command_RegisterNode:
		if err := validateNode(op.RegisterNode.GetNode()); err != nil {
			return refusedErr(err)
		}
	}
	return nil
}

// precheckCreateTable refuses a table definition that cannot be valid in
// any state: bad names, columns or keys, properties over their bounds.
func precheckCreateTable(c *pb.CreateTable) *precheckOutcome {
	if !validName(c.GetDatabase()) {
		return refused(errorf(codeUnknownDatabase, "database %.256q does not exist", c.GetDatabase()))
	}
	name := c.GetName()
	if !validName(name) {
		return refused(errorf(codeInvalidRequest, "invalid table name %.256q: %s", name, nameRule))
	}
	qualified := c.GetDatabase() + "." + name
	if _, err := validateSchema(qualified, c); err != nil {
		return refusedErr(err)
	}
	props := c.GetProperties()
	if len(props) > MaxProperties {
		return refused(errorf(codeInvalidRequest, "table %q has %d properties; at most %d", qualified, len(props), MaxProperties))
	}
	for k, v := range props {
		if len(k) > MaxPropertyKeyBytes || len(v) > MaxPropertyValueBytes {
			return refused(errorf(codeInvalidRequest, "table %q: property %.64q is over %d bytes or its value over %d",
				qualified, k, MaxPropertyKeyBytes, MaxPropertyValueBytes))
		}
	}
	if b := c.GetBuckets(); b < 0 || b > MaxBuckets {
		return refused(errorf(codeInvalidRequest, "table %q: buckets must be 1 to %d, not %d", qualified, MaxBuckets, b))
	}
	return nil
}
