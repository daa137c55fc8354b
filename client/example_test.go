package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/floedb/floe/client"
)

// Example creates a log table, appends rows to it and reads them back. It
// needs a running cluster (`floe dev`), so it is compiled, not run.
func Example() {
	ctx := context.Background()
	c, err := client.Connect(ctx, "127.0.0.1:7700")
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
	}, client.IfNotExists())
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := c.Table(ctx, "shop", "clicks")
	if err != nil {
		log.Fatal(err)
	}

	// Append: rows are batched per bucket and sent in the background.
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	enc := tbl.NewRowEncoder()
	enc.SetInt64(0, 42)
	enc.SetString(1, "/home")
	row, err := enc.Finish(nil)
	if err != nil {
		log.Fatal(err)
	}
	first, err := w.Append(ctx, row)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.AppendJSON(ctx, []byte(`{"user_id": 7, "url": "/cart"}`)); err != nil {
		log.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil { // every row acknowledged, or the first error
		log.Fatal(err)
	}
	res, err := first.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("first row: bucket %d offset %d\n", res.Bucket, res.Offset)
	if err := w.Close(ctx); err != nil {
		log.Fatal(err)
	}

	// Scan: every bucket from the start, as JSON.
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
	records, err := s.Poll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range records {
		line, err := codec.AppendJSON(nil, r.Row)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("bucket %d offset %d: %s\n", r.Bucket, r.Offset, line)
	}
}
