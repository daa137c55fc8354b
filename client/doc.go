// Package client is Floe's Go SDK.
//
//	c, err := client.Connect(ctx, "127.0.0.1:7700", "127.0.0.1:7710")
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Admin().CreateDatabase(ctx, "shop", client.IfNotExists())
//	err = c.Admin().CreateTable(ctx, client.TableSpec{
//		Database: "shop", Name: "orders",
//		Schema:   "id BIGINT NOT NULL, item STRING, amount DECIMAL(10,2)",
//		PrimaryKey: []string{"id"},
//	})
//
// Every call tries the given servers in turn and retries errors that say so
// (no leader yet, not the leader, unavailable) until its context ends. Writes
// carry a request id chosen once per call, so a retry after an unknown
// outcome is applied at most once.
package client
