package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// The examples run against a one-node cluster started in the test process;
// nodeAddr is its address. Against `floe dev` it would be "127.0.0.1:7700".
func nodeAddr() string { return client.NodeForExamples() }

// Example connects, creates a log table, appends two rows and reads them
// back. docs/sdk.md and the README's SDK program are this example.
func Example() {
	ctx := context.Background()
	c, err := client.Connect(ctx, nodeAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	admin := c.Admin()
	if err := admin.CreateDatabase(ctx, "shop", client.IfNotExists()); err != nil {
		log.Fatal(err)
	}
	_, err = admin.CreateTable(ctx, client.TableSpec{
		Database: "shop", Name: "clicks",
		Schema:    "user_id BIGINT NOT NULL, url STRING",
		BucketKey: []string{"user_id"}, // a user's clicks stay in order
		Buckets:   1,
	}, client.IfNotExists())
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := c.Table(ctx, "shop", "clicks")
	if err != nil {
		log.Fatal(err)
	}

	// Write: rows are batched per bucket and sent in the background.
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	first, err := w.AppendJSON(ctx, []byte(`{"user_id": 42, "url": "/home"}`))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.AppendJSON(ctx, []byte(`{"user_id": 7, "url": "/cart"}`)); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(ctx); err != nil { // flushes: every row acknowledged, or the first error
		log.Fatal(err)
	}
	res, err := first.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("first row: bucket %d offset %d\n", res.Bucket, res.Offset)

	// Read the stream: every bucket from the start, as JSON.
	s, err := tbl.NewLogScanner(client.LogScannerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for b := range tbl.Buckets() {
		if err := s.Subscribe(b, client.Earliest()); err != nil {
			log.Fatal(err)
		}
	}
	codec := tbl.JSONCodec()
	for read := 0; read < 2; {
		records, err := s.Poll(ctx) // waits up to MaxWait; none if none came
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range records {
			line, err := codec.AppendJSON(nil, r.Row)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("offset %d: %s\n", r.Offset, line)
			read++
		}
	}

	if err := admin.DropDatabase(ctx, "shop", client.Cascade()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// first row: bucket 0 offset 0
	// offset 0: {"user_id":42,"url":"/home"}
	// offset 1: {"user_id":7,"url":"/cart"}
}

// ExampleConnect opens a client. Give it several nodes: metadata calls try
// them in turn, and retry while the cluster elects a leader.
func ExampleConnect() {
	ctx := context.Background()
	c, err := client.Connect(ctx, nodeAddr() /* , "10.0.0.2:7700", ... */)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // closes its connections; writers and scanners first

	status, err := c.Admin().ClusterStatus(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d node(s), leader %d\n", len(status.Nodes), status.Leader)
	// Output:
	// 1 node(s), leader 1
}

// Example_primaryKey upserts rows of a primary-key table, updates one
// column of a row, deletes a row and looks rows up by key.
func Example_primaryKey() {
	ctx := context.Background()
	c, err := client.Connect(ctx, nodeAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	admin := c.Admin()
	if err := admin.CreateDatabase(ctx, "crm", client.IfNotExists()); err != nil {
		log.Fatal(err)
	}
	_, err = admin.CreateTable(ctx, client.TableSpec{
		Database: "crm", Name: "users",
		Schema:     "id BIGINT NOT NULL, name STRING, visits INT",
		PrimaryKey: []string{"id"},
	}, client.IfNotExists())
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := c.Table(ctx, "crm", "users")
	if err != nil {
		log.Fatal(err)
	}

	// Upsert: a row replaces its key's row; Delete needs the key columns.
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, row := range []string{
		`{"id": 1, "name": "ada", "visits": 1}`,
		`{"id": 2, "name": "bob", "visits": 1}`,
	} {
		if _, err := w.UpsertJSON(ctx, []byte(row)); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := w.DeleteJSON(ctx, []byte(`{"id": 2}`)); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		log.Fatal(err)
	}

	// A partial update sets only its columns.
	pw, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{PartialColumns: []string{"id", "visits"}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pw.UpsertJSON(ctx, []byte(`{"id": 1, "visits": 2}`)); err != nil {
		log.Fatal(err)
	}
	if err := pw.Close(ctx); err != nil {
		log.Fatal(err)
	}

	// Lookup: an acknowledged write is seen by a later lookup.
	l, err := tbl.NewLookuper(client.LookuperOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	codec := tbl.JSONCodec()
	for _, key := range []string{`{"id": 1}`, `{"id": 2}`} {
		row, found, err := l.LookupJSON(ctx, []byte(key))
		if err != nil {
			log.Fatal(err)
		}
		if !found {
			fmt.Printf("%s: not found\n", key)
			continue
		}
		line, err := codec.AppendJSON(nil, row)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s\n", key, line)
	}

	if err := admin.DropDatabase(ctx, "crm", client.Cascade()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"id": 1}: {"id":1,"name":"ada","visits":2}
	// {"id": 2}: not found
}

// Example_errors tells errors apart with errors.Is: the server's come back
// as transport errors (transport.ErrUnknownTable, ErrNotLeader, ...,
// transport.IsRetriable says which are worth a retry), the SDK's own are
// client.Err... sentinels. Never match error text.
func Example_errors() {
	ctx := context.Background()
	c, err := client.Connect(ctx, nodeAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.Table(ctx, "nosuch", "table")
	fmt.Println("unknown database:", errors.Is(err, transport.ErrUnknownDatabase))

	admin := c.Admin()
	if err := admin.CreateDatabase(ctx, "logs", client.IfNotExists()); err != nil {
		log.Fatal(err)
	}
	_, err = c.Table(ctx, "logs", "nosuch")
	fmt.Println("unknown table:", errors.Is(err, transport.ErrUnknownTable))

	_, err = admin.CreateTable(ctx, client.TableSpec{Database: "logs", Name: "events", Schema: "msg STRING"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = admin.CreateTable(ctx, client.TableSpec{Database: "logs", Name: "events", Schema: "msg STRING"})
	fmt.Println("created twice:", errors.Is(err, transport.ErrAlreadyExists))

	tbl, err := c.Table(ctx, "logs", "events")
	if err != nil {
		log.Fatal(err)
	}
	_, err = tbl.NewLookuper(client.LookuperOptions{})
	fmt.Println("lookup in a log table:", errors.Is(err, client.ErrNotPrimaryKeyTable))

	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = w.AppendJSON(ctx, []byte(`{"msg": "late"}`))
	fmt.Println("closed writer:", errors.Is(err, client.ErrWriterClosed))

	if err := admin.DropDatabase(ctx, "logs", client.Cascade()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// unknown database: true
	// unknown table: true
	// created twice: true
	// lookup in a log table: true
	// closed writer: true
}
