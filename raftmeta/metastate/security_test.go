package metastate

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/floedb/floe/transport/pb"
)

func userRecord(name string) *pb.UserRecord {
	return &pb.UserRecord{Name: name, Salt: []byte("salt"), Iterations: 8192,
		StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32)}
}

func putUser(u *pb.UserRecord, create, alter bool) *pb.Command {
	return &pb.Command{Op: &pb.Command_PutUser{PutUser: &pb.PutUser{User: u, Create: create, Alter: alter, NowMs: 1000}}}
}

func aclEntry(principal string, rt pb.AclResourceType, name string, pattern pb.AclPatternType, op pb.AclOperation, perm pb.AclPermission) *pb.AclEntry {
	return &pb.AclEntry{Principal: principal, Host: "*", ResourceType: rt, ResourceName: name, Pattern: pattern, Operation: op, Permission: perm}
}

func addACLs(e ...*pb.AclEntry) *pb.Command {
	return &pb.Command{Op: &pb.Command_AddAcls{AddAcls: &pb.AddAcls{Entries: e}}}
}

func removeACLs(e ...*pb.AclEntry) *pb.Command {
	return &pb.Command{Op: &pb.Command_RemoveAcls{RemoveAcls: &pb.RemoveAcls{Entries: e}}}
}

func TestUsers(t *testing.T) {
	h := newHarness(t)
	h.ok(putUser(userRecord("alice"), true, false))
	if u := h.feedAt(h.index); len(u.GetUsers()) != 1 || u.GetUsers()[0].GetName() != "alice" {
		t.Fatalf("feed: %v, want alice", u)
	}
	wantRefused(t, h.apply(putUser(userRecord("alice"), true, false)), codeAlreadyExists, "alice")
	wantRefused(t, h.apply(putUser(userRecord("bob"), false, true)), codeInvalidRequest, "no user \"bob\"")
	changed := userRecord("alice")
	changed.Salt = []byte("new salt")
	h.ok(putUser(changed, false, true))

	bad := []*pb.UserRecord{
		{Name: "no creds"},
		func() *pb.UserRecord { u := userRecord("few"); u.Iterations = 10; return u }(),
		func() *pb.UserRecord { u := userRecord("huge"); u.Salt = make([]byte, 1000); return u }(),
		userRecord("a:b"),
	}
	for _, u := range bad {
		wantRefused(t, h.apply(putUser(u, false, false)), codeInvalidRequest)
	}

	err := h.s.Read(func(v *View) error {
		users, err := v.Users(true)
		if err != nil {
			return err
		}
		if len(users) != 1 || users[0].GetSalt() != nil || users[0].GetCreatedAtMs() != 1000 {
			t.Fatalf("bare users: %v", users)
		}
		full, err := v.User("alice")
		if err != nil || string(full.GetSalt()) != "new salt" {
			t.Fatalf("alice: %v, %v", full, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.ok(&pb.Command{Op: &pb.Command_DeleteUser{DeleteUser: &pb.DeleteUser{Name: "alice"}}})
	if u := h.feedAt(h.index); len(u.GetDroppedUsers()) != 1 {
		t.Fatalf("feed after delete: %v", u)
	}
	wantRefused(t, h.apply(&pb.Command{Op: &pb.Command_DeleteUser{DeleteUser: &pb.DeleteUser{Name: "alice"}}}), codeInvalidRequest)
}

func TestACLs(t *testing.T) {
	const (
		table  = pb.AclResourceType_ACL_RESOURCE_TABLE
		db     = pb.AclResourceType_ACL_RESOURCE_DATABASE
		lit    = pb.AclPatternType_ACL_PATTERN_LITERAL
		prefix = pb.AclPatternType_ACL_PATTERN_PREFIX
		read   = pb.AclOperation_ACL_OPERATION_READ
		allow  = pb.AclPermission_ACL_PERMISSION_ALLOW
		deny   = pb.AclPermission_ACL_PERMISSION_DENY
	)
	h := newHarness(t)
	a := aclEntry("user:alice", table, "db.t", lit, read, allow)
	b := aclEntry("user:*", db, "team_", prefix, read, deny)
	res := h.ok(addACLs(a, b, a))
	if res.GetAclsChanged() != 2 {
		t.Fatalf("added %d, want 2 (one entry given twice)", res.GetAclsChanged())
	}
	if u := h.feedAt(h.index); !u.GetAclsSet() || len(u.GetAcls()) != 2 {
		t.Fatalf("feed: %v, want the whole list", u)
	}
	if res := h.ok(addACLs(a)); !res.GetUnchanged() || h.feedAt(h.index) != nil {
		t.Fatalf("adding an entry present: %v, feed %v", res, h.feedAt(h.index))
	}
	for _, e := range []*pb.AclEntry{
		aclEntry("alice", table, "db.t", lit, read, allow),
		aclEntry("user:alice", table, "db", lit, read, allow),
		aclEntry("user:alice", table, "db.t", 0, read, allow),
		aclEntry("user:alice", table, "db.t", lit, 0, allow),
		aclEntry("user:alice", table, "db.t", lit, read, 0),
		aclEntry("user:alice", pb.AclResourceType_ACL_RESOURCE_CLUSTER, "x", lit, read, allow),
		func() *pb.AclEntry {
			e := aclEntry("user:alice", table, "db.t", lit, read, allow)
			e.Host = "nohost"
			return e
		}(),
	} {
		wantRefused(t, h.apply(addACLs(e)), codeInvalidRequest, "ACL")
	}
	for _, name := range []string{"", "db", "db.", "db.t"} {
		h.ok(addACLs(aclEntry("user:bob", table, name, prefix, read, allow)))
	}
	res = h.ok(removeACLs(a, aclEntry("user:nobody", table, "db.t", lit, read, allow)))
	if res.GetAclsChanged() != 1 {
		t.Fatalf("removed %d, want 1", res.GetAclsChanged())
	}
	img, err := h.s.Image()
	if err != nil {
		t.Fatal(err)
	}
	if !img.GetAclsSet() || len(img.GetAcls()) != 5 {
		t.Fatalf("image ACLs: %d (set %v), want 5", len(img.GetAcls()), img.GetAclsSet())
	}
}

func TestWriterKeyIsSetOnce(t *testing.T) {
	h := newHarness(t)
	first, second := bytes.Repeat([]byte{7}, WriterKeyBytes), bytes.Repeat([]byte{8}, WriterKeyBytes)
	h.ok(&pb.Command{Op: &pb.Command_InitWriterKey{InitWriterKey: &pb.InitWriterKey{Key: first}}})
	if res := h.ok(&pb.Command{Op: &pb.Command_InitWriterKey{InitWriterKey: &pb.InitWriterKey{Key: second}}}); !res.GetUnchanged() {
		t.Fatal("a second writer key replaced the first")
	}
	wantRefused(t, h.apply(&pb.Command{Op: &pb.Command_InitWriterKey{InitWriterKey: &pb.InitWriterKey{Key: []byte("short")}}}), codeInvalidRequest)
	img, err := h.s.Image()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.GetWriterKey(), first) {
		t.Fatalf("image writer key %x, want the first", img.GetWriterKey())
	}
}

// TestOpenFileWithoutSecurityBuckets: a file written before users and ACLs
// existed opens, and gets their buckets.
func TestOpenFileWithoutSecurityBuckets(t *testing.T) {
	h := newHarness(t)
	h.ok(initCluster("c1"))
	h.s.Close()
	db, err := bolt.Open(h.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range addedBuckets {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if h.s, err = Open(h.path, nil); err != nil {
		t.Fatalf("open a file without the security buckets: %v", err)
	}
	h.ok(putUser(userRecord("alice"), true, false))
}
