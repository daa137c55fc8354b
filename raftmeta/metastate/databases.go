package metastate

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// createDatabase adds a database with the next database id.
func (a *applier) createDatabase(c *pb.CreateDatabase) (*pb.CommandResult, error) {
	name := c.GetName()
	if !validName(name) {
		return nil, errorf(codeInvalidRequest, "invalid database name %.256q: %s", name, nameRule)
	}
	existing, err := getDatabase(a.tx, name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if c.GetIfNotExists() {
			return &pb.CommandResult{Value: &pb.CommandResult_Database{Database: existing}, Unchanged: true}, nil
		}
		return nil, errorf(codeAlreadyExists, "database %q already exists", name)
	}
	id, err := nextID(a.tx, keyLastDatabaseID)
	if err != nil {
		return nil, err
	}
	rec := &pb.DatabaseRecord{Id: id, Name: name, CreatedAtMs: a.appendedAtMs}
	if err := putRecord(a.tx.Bucket(bucketDatabases), []byte(name), rec); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Database{Database: rec}}, nil
}

// dropDatabase removes a database; with cascade, its tables and their
// buckets too.
func (a *applier) dropDatabase(c *pb.DropDatabase) (*pb.CommandResult, error) {
	name := c.GetName()
	db, err := getDatabase(a.tx, name)
	if err != nil {
		return nil, err
	}
	if db == nil {
		if c.GetIfExists() {
			return &pb.CommandResult{Unchanged: true}, nil
		}
		return nil, errorf(codeUnknownDatabase, "database %.256q does not exist", name)
	}
	tables, err := listTables(a.tx, db.GetId())
	if err != nil {
		return nil, err
	}
	if len(tables) > 0 && !c.GetCascade() {
		return nil, errorf(codeNotEmpty, "database %q holds %s; drop them first or use cascade", name, plural(len(tables), "table"))
	}
	for _, t := range tables {
		if err := a.dropTableRecord(t); err != nil {
			return nil, err
		}
	}
	if err := a.tx.Bucket(bucketDatabases).Delete([]byte(name)); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Database{Database: db}}, nil
}

// getDatabase returns a database by name, or nil.
func getDatabase(tx *bolt.Tx, name string) (*pb.DatabaseRecord, error) {
	if !validName(name) {
		return nil, nil // never stored; also keeps bad keys away from bbolt
	}
	db := &pb.DatabaseRecord{}
	ok, err := getRecord(tx.Bucket(bucketDatabases), []byte(name), db)
	if !ok || err != nil {
		return nil, err
	}
	return db, nil
}

// listDatabases returns every database, sorted by name.
func listDatabases(tx *bolt.Tx) ([]*pb.DatabaseRecord, error) {
	var out []*pb.DatabaseRecord
	err := tx.Bucket(bucketDatabases).ForEach(func(k, v []byte) error {
		db := &pb.DatabaseRecord{}
		if err := proto.Unmarshal(v, db); err != nil {
			return corruptRecord(k, err)
		}
		out = append(out, db)
		return nil
	})
	return out, err
}

// nextID raises a counter of the meta bucket and returns its new value.
func nextID(tx *bolt.Tx, key []byte) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	id, err := getU64(meta, key)
	if err != nil {
		return 0, err
	}
	id++
	return id, putU64(meta, key, id)
}

// plural renders "1 table", "3 tables".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
