package metastate

import (
	"net/netip"
	"strings"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// Users, ACLs and the writer key are the cluster's security state. Users
// live in the users bucket (key: the name), ACL entries in the acls bucket
// (key: the entry's deterministic encoding, so an entry is stored once),
// the writer key under meta/writer_key. Every change is in the metadata
// feed: users as records, ACLs as the whole list (they are few and a node
// swaps its copy at once), the writer key once.

// Bounds of the security state.
const (
	// MaxUsers bounds the users of a cluster.
	MaxUsers = 10_000
	// MaxACLs bounds the ACL entries of a cluster; MaxACLsPerCommand those
	// one command adds or removes.
	MaxACLs           = 10_000
	MaxACLsPerCommand = 1_000
	// maxCredentialBytes bounds a salt or key of a user record.
	maxCredentialBytes = 256
	// minIterations is RFC 7677's minimum PBKDF2 iteration count; the
	// maximum keeps a hostile record from costing the clients minutes.
	minIterations = 4096
	maxIterations = 1 << 20
	// WriterKeyBytes is the size of the writer key.
	WriterKeyBytes = 32
)

var keyWriterKey = []byte("writer_key")

// putUser creates a user or changes its credentials.
func (a *applier) putUser(c *pb.PutUser) (*pb.CommandResult, error) {
	u := c.GetUser()
	if err := validateUser(u); err != nil {
		return nil, err
	}
	users := a.tx.Bucket(bucketUsers)
	old := &pb.UserRecord{}
	exists, err := getRecord(users, []byte(u.GetName()), old)
	if err != nil {
		return nil, err
	}
	switch {
	case exists && c.GetCreate():
		return nil, errorf(codeAlreadyExists, "user %q already exists", u.GetName())
	case !exists && c.GetAlter():
		return nil, errorf(codeInvalidRequest, "no user %q", u.GetName())
	case !exists && users.Stats().KeyN >= MaxUsers:
		return nil, errorf(codeInvalidRequest, "the cluster has %d users, the most it may have", MaxUsers)
	}
	rec := proto.CloneOf(u)
	rec.CreatedAtMs, rec.ChangedAtMs = c.GetNowMs(), c.GetNowMs()
	if exists {
		rec.CreatedAtMs = old.GetCreatedAtMs()
	}
	if err := putRecord(users, []byte(rec.GetName()), rec); err != nil {
		return nil, err
	}
	a.changes.users = append(a.changes.users, rec)
	return &pb.CommandResult{}, nil
}

// validateUser checks a user record's name and credentials.
func validateUser(u *pb.UserRecord) error {
	if err := identity.ValidUserName(u.GetName()); err != nil {
		return errorf(codeInvalidRequest, "%s", pkgerr.Message(err))
	}
	for _, f := range []struct {
		name string
		v    []byte
	}{{"salt", u.GetSalt()}, {"stored key", u.GetStoredKey()}, {"server key", u.GetServerKey()}} {
		if len(f.v) == 0 || len(f.v) > maxCredentialBytes {
			return errorf(codeInvalidRequest, "user %q: %s of %d bytes, want 1 to %d", u.GetName(), f.name, len(f.v), maxCredentialBytes)
		}
	}
	if it := u.GetIterations(); it < minIterations || it > maxIterations {
		return errorf(codeInvalidRequest, "user %q: %d iterations, want %d to %d", u.GetName(), it, minIterations, maxIterations)
	}
	return nil
}

// deleteUser deletes a user; its ACLs stay.
func (a *applier) deleteUser(c *pb.DeleteUser) (*pb.CommandResult, error) {
	users := a.tx.Bucket(bucketUsers)
	if users.Get([]byte(c.GetName())) == nil {
		return nil, errorf(codeInvalidRequest, "no user %q", c.GetName())
	}
	if err := users.Delete([]byte(c.GetName())); err != nil {
		return nil, err
	}
	a.changes.droppedUsers = append(a.changes.droppedUsers, c.GetName())
	return &pb.CommandResult{}, nil
}

// addAcls adds ACL entries not there yet.
func (a *applier) addAcls(c *pb.AddAcls) (*pb.CommandResult, error) {
	if err := checkACLCount(len(c.GetEntries())); err != nil {
		return nil, err
	}
	acls := a.tx.Bucket(bucketACLs)
	added := 0
	for _, e := range c.GetEntries() {
		if err := ValidateACL(e); err != nil {
			return nil, err
		}
		key, err := aclKey(e)
		if err != nil {
			return nil, err
		}
		if acls.Get(key) != nil {
			continue
		}
		if acls.Stats().KeyN+added >= MaxACLs {
			return nil, errorf(codeInvalidRequest, "the cluster has %d ACL entries, the most it may have", MaxACLs)
		}
		if err := acls.Put(key, key); err != nil {
			return nil, err
		}
		added++
	}
	return a.aclsChanged(added)
}

// removeAcls removes the ACL entries equal to those given.
func (a *applier) removeAcls(c *pb.RemoveAcls) (*pb.CommandResult, error) {
	if err := checkACLCount(len(c.GetEntries())); err != nil {
		return nil, err
	}
	acls := a.tx.Bucket(bucketACLs)
	removed := 0
	for _, e := range c.GetEntries() {
		key, err := aclKey(e)
		if err != nil {
			return nil, err
		}
		if acls.Get(key) == nil {
			continue
		}
		if err := acls.Delete(key); err != nil {
			return nil, err
		}
		removed++
	}
	return a.aclsChanged(removed)
}

func checkACLCount(n int) error {
	if n == 0 || n > MaxACLsPerCommand {
		return errorf(codeInvalidRequest, "%d ACL entries in one command, want 1 to %d", n, MaxACLsPerCommand)
	}
	return nil
}

// aclsChanged lists the whole ACL list in the feed when n entries changed.
func (a *applier) aclsChanged(n int) (*pb.CommandResult, error) {
	res := &pb.CommandResult{AclsChanged: uint32(n), Unchanged: n == 0}
	if n == 0 {
		return res, nil
	}
	all, err := listACLs(a.tx)
	if err != nil {
		return nil, err
	}
	a.changes.aclsSet, a.changes.acls = true, all
	return res, nil
}

// aclKey is an entry's stored key: its deterministic encoding.
func aclKey(e *pb.AclEntry) ([]byte, error) {
	b, err := marshal.Marshal(e)
	if err != nil {
		return nil, errorf(codeInvalidRequest, "ACL entry: %v", err)
	}
	return b, nil
}

// listACLs returns every ACL entry, in key order.
func listACLs(tx *bolt.Tx) ([]*pb.AclEntry, error) {
	return decodeAll(tx.Bucket(bucketACLs), func() *pb.AclEntry { return &pb.AclEntry{} })
}

// ValidateACL checks an ACL entry: a principal ("user:NAME", "node:ID" or
// "user:*"), a host ("*" or an IP address), a resource with a name that
// fits its type and pattern, an operation and a permission.
func ValidateACL(e *pb.AclEntry) error {
	if p := e.GetPrincipal(); p != "user:*" {
		if _, err := identity.Parse(p); err != nil {
			return errorf(codeInvalidRequest, "ACL principal: %s", pkgerr.Message(err))
		}
	}
	if h := e.GetHost(); h != "*" {
		if _, err := netip.ParseAddr(h); err != nil {
			return errorf(codeInvalidRequest, "ACL host %q: want * or an IP address", h)
		}
	}
	if e.GetPattern() != pb.AclPatternType_ACL_PATTERN_LITERAL && e.GetPattern() != pb.AclPatternType_ACL_PATTERN_PREFIX {
		return errorf(codeInvalidRequest, "ACL pattern: want literal or prefix")
	}
	if err := validateACLResource(e); err != nil {
		return err
	}
	if op := e.GetOperation(); op <= pb.AclOperation_ACL_OPERATION_UNSPECIFIED || op > pb.AclOperation_ACL_OPERATION_ALL {
		return errorf(codeInvalidRequest, "ACL operation: want read, write, create, drop, alter, describe, cluster-admin or all")
	}
	if pm := e.GetPermission(); pm != pb.AclPermission_ACL_PERMISSION_ALLOW && pm != pb.AclPermission_ACL_PERMISSION_DENY {
		return errorf(codeInvalidRequest, "ACL permission: want allow or deny")
	}
	return nil
}

// validateACLResource checks a resource name against its type: none for
// the cluster, a database name, "database.table". A prefix may stop
// anywhere, so it only needs to be a prefix of a valid name.
func validateACLResource(e *pb.AclEntry) error {
	name, prefix := e.GetResourceName(), e.GetPattern() == pb.AclPatternType_ACL_PATTERN_PREFIX
	switch e.GetResourceType() {
	case pb.AclResourceType_ACL_RESOURCE_CLUSTER:
		if name != "" || prefix {
			return errorf(codeInvalidRequest, "ACL on the cluster: no resource name or prefix")
		}
		return nil
	case pb.AclResourceType_ACL_RESOURCE_DATABASE:
		if validName(name) || prefix && name == "" {
			return nil
		}
		return errorf(codeInvalidRequest, "ACL database %q: %s", name, nameRule)
	case pb.AclResourceType_ACL_RESOURCE_TABLE:
		db, table, dotted := strings.Cut(name, ".")
		literalOK := dotted && validName(db) && validName(table)
		prefixOK := name == "" || validName(db) && (!dotted || table == "" || validName(table))
		if literalOK || prefix && prefixOK {
			return nil
		}
		return errorf(codeInvalidRequest, "ACL table %q: want database.table (%s)", name, nameRule)
	}
	return errorf(codeInvalidRequest, "ACL resource: want cluster, database or table")
}

// initWriterKey sets the writer key, once.
func (a *applier) initWriterKey(c *pb.InitWriterKey) (*pb.CommandResult, error) {
	if len(c.GetKey()) != WriterKeyBytes {
		return nil, errorf(codeInvalidRequest, "writer key of %d bytes, want %d", len(c.GetKey()), WriterKeyBytes)
	}
	meta := a.tx.Bucket(bucketMeta)
	if meta.Get(keyWriterKey) != nil {
		return &pb.CommandResult{Unchanged: true}, nil
	}
	if err := meta.Put(keyWriterKey, c.GetKey()); err != nil {
		return nil, err
	}
	a.changes.writerKey = c.GetKey()
	return &pb.CommandResult{}, nil
}

// Users returns every user, without credentials when bare.
func (v *View) Users(bare bool) ([]*pb.UserRecord, error) {
	users, err := decodeAll(v.tx.Bucket(bucketUsers), func() *pb.UserRecord { return &pb.UserRecord{} })
	if err != nil || !bare {
		return users, err
	}
	for _, u := range users {
		u.Salt, u.StoredKey, u.ServerKey, u.Iterations = nil, nil, nil, 0
	}
	return users, nil
}

// User returns a user with its credentials; nil when there is none.
func (v *View) User(name string) (*pb.UserRecord, error) {
	u := &pb.UserRecord{}
	ok, err := getRecord(v.tx.Bucket(bucketUsers), []byte(name), u)
	if err != nil || !ok {
		return nil, err
	}
	return u, nil
}

// ACLs returns every ACL entry.
func (v *View) ACLs() ([]*pb.AclEntry, error) { return listACLs(v.tx) }

// WriterKey returns the writer key; nil until set.
func (v *View) WriterKey() []byte {
	k := v.tx.Bucket(bucketMeta).Get(keyWriterKey)
	if k == nil {
		return nil
	}
	return append([]byte(nil), k...)
}

// Users returns every user, without credentials, sorted by name.
func (s *State) Users() ([]*pb.UserRecord, error) {
	var out []*pb.UserRecord
	err := s.Read(func(v *View) (err error) {
		out, err = v.Users(true)
		return err
	})
	return out, err
}

// ACLs returns every ACL entry.
func (s *State) ACLs() ([]*pb.AclEntry, error) {
	var out []*pb.AclEntry
	err := s.Read(func(v *View) (err error) {
		out, err = v.ACLs()
		return err
	})
	return out, err
}
