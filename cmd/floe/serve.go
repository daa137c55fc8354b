package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/floedb/floe/server"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
)

// serveSpec is `floe serve`: one node of a cluster, with the roles asked for.
func serveSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "serve --id ID --roles meta[,tablet] --data-dir DIR --listen ADDR [--advertise ADDR] --gossip ADDR [--join ADDR,...] [--bootstrap-expect N] [--http ADDR]",
		summary: "run a node: metadata voter (meta), tablet node, or both",
		define: func(fs *flag.FlagSet) runFunc {
			id := fs.Uint("id", 0, "node id, a positive integer unique in the cluster")
			roles := new(string)
			choiceListVar(fs, roles, "roles", "meta,tablet", []string{server.RoleMeta, server.RoleTablet}, "comma-separated roles: meta, tablet")
			dataDir := fs.String("data-dir", "", "folder for everything this node stores")
			listen := fs.String("listen", "127.0.0.1:7700", "RPC address (DRPC and Raft share it)")
			advertise := fs.String("advertise", "", "RPC address peers and clients use (default: --listen)")
			gossip := fs.String("gossip", "", "gossip address (default: the listen host, port + 1)")
			join := fs.String("join", "", "comma-separated RPC addresses of nodes to form or join a cluster with")
			bootstrapExpect := fs.Int("bootstrap-expect", 0, "form a new cluster once this many meta nodes know each other")
			rack := fs.String("rack", "", "rack or zone, to place replicas apart")
			httpAddr := fs.String("http", "", "address for /healthz, /readyz, /metrics (Prometheus) and /debug/pprof/")
			logLevel := logLevelVar(fs, "info")
			gossipProfile := fs.String("gossip-profile", "local", "failure detection: local (about 1 s) or lan (memberlist's LAN defaults, several seconds)")
			grace := fs.Duration("liveness-grace", time.Second, "how long a tablet node stays dead before its leaderships move")
			maxBatch := fs.Int("max-batch-bytes", 8<<20, "largest record batch a produce may carry")
			logSync := new(string)
			choiceVar(fs, logSync, "log-sync", "always", []string{"always", "interval", "never"}, "fsync policy of bucket logs: always, interval or never")
			snapshotThreshold := fs.Uint64("raft-snapshot-threshold", 0, "Raft log entries between snapshots (0: default 8192)")
			snapshotInterval := fs.Duration("raft-snapshot-interval", 0, "how often Raft checks whether to snapshot (0: default 2m)")
			kvValueThreshold := fs.Int64("kv-value-threshold-bytes", 0, "rows larger than this go to the value log of the node's Badger database, smaller ones stay in its LSM tree (0: 256)")
			kvMemtable := fs.Int64("kv-memtable-bytes", 0, "memtable size of the node's Badger database, which all its primary-key bucket replicas share (0: 16 MiB); also bounds one apply transaction")
			kvBlockCache := fs.Int64("kv-block-cache-bytes", 0, "block cache of the node's Badger database (0: none; tables are read through the page cache)")
			kvIndexCache := fs.Int64("kv-index-cache-bytes", 0, "memory bound of the table indexes and bloom filters of the node's Badger database (0: unbounded, all in memory)")
			kvRowCache := fs.Int64("kv-row-cache-bytes", 0, "memory for recently read rows of primary-key tables, shared by the node's buckets; filled by lookups, outside the Go heap (0: a quarter of the machine's or cgroup's memory, -1: none)")
			kvBuffer := fs.Int64("kv-buffer-bytes", 0, "uncommitted upserts a primary-key bucket leader holds before it refuses more until followers catch up (0: 64 MiB)")
			trailingLogs := fs.Uint64("raft-trailing-logs", 0, "Raft log entries a snapshot leaves behind for lagging followers (0: default 10240)")
			maxRPCConns := fs.Int("max-rpc-conns", transport.DefaultMaxConns, "DRPC connections served at once; a call on one more is answered UNAVAILABLE")
			maxRaftConns := fs.Int("max-raft-conns", transport.DefaultMaxRaftConns, "incoming Raft connections held at once (a share of their own); one more closes the idlest")
			messageTimeout := fs.Duration("rpc-message-timeout", transport.DefaultMessageTimeout, "how long a request message, once started, may take to arrive whole before the connection is closed")
			maxInflight := fs.Int("max-inflight-request-bytes", transport.DefaultMaxInflightRequestBytes, "bytes of large requests (over 64 KiB) the node holds in reception and handling at once; one more waits, then is answered UNAVAILABLE (-1: no bound)")
			remote := defineRemoteFlags(fs, "tier sealed log segments to this folder (shared by every tablet node, e.g. a network mount); default: no tiering", true)
			catalogURI := fs.String("lake-catalog", "", "Iceberg REST catalog (http(s)://host:port[/path]) to register lake tables in as DATABASE.TABLE, at each committed version; default: the lake is read by path only")
			catalogWarehouse := fs.String("lake-catalog-warehouse", "", "warehouse to ask the --lake-catalog for (its /v1/config?warehouse=)")
			catalogTokenFile := fs.String("lake-catalog-token-file", "", "file whose first line is the --lake-catalog's bearer token (default: $FLOE_LAKE_CATALOG_TOKEN); never on the command line")
			sec := defineSecurityFlags(fs)
			return func(ctx context.Context, pos []string) error {
				var err error
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if *id == 0 || *id > 1<<32-1 {
					return fmt.Errorf("%w: --id must be a positive 32-bit integer", errUsage)
				}
				var level slog.Level
				if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
					return fmt.Errorf("%w: --log-level: %v", errUsage, err)
				}
				g := *gossip
				if g == "" {
					g, err = nextPort(*listen)
					if err != nil {
						return fmt.Errorf("%w: %v", errUsage, err)
					}
				}
				sync, err := logstore.ParseSyncPolicy(*logSync)
				if err != nil {
					return fmt.Errorf("%w: %v", errUsage, err)
				}
				store, err := remote.open(ctx, "")
				if err != nil {
					return err
				}
				catalog, err := openLakeCatalog(*catalogURI, *catalogWarehouse, *catalogTokenFile, os.Getenv(lakeCatalogTokenEnv))
				if err != nil {
					return err
				}
				logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
				secCfg, err := sec.config()
				if err != nil {
					return err
				}
				warnPlaintext(logger, *listen, secCfg)
				srv, err := server.New(server.Config{
					TLS: secCfg.TLS, TLSClientAuth: secCfg.TLSClientAuth, Authorization: secCfg.Authorization,
					SuperUsers: secCfg.SuperUsers, GossipKeyFile: secCfg.GossipKeyFile,
					Remote: store, TieringInterval: *remote.interval, LakeCatalog: catalog,
					NodeID: uint32(*id), Roles: splitList(*roles), DataDir: *dataDir, Listen: *listen,
					Advertise: *advertise, Gossip: g, Join: splitList(*join), BootstrapExpect: *bootstrapExpect,
					Rack: *rack, HTTP: *httpAddr, RaftSnapshotThreshold: *snapshotThreshold, RaftTrailingLogs: *trailingLogs, MaxBatchBytes: *maxBatch, LogSync: sync,
					GossipProfile: *gossipProfile, LivenessGrace: *grace,
					MaxRPCConns: *maxRPCConns, MaxRaftConns: *maxRaftConns, MessageTimeout: *messageTimeout,
					MaxInflightRequestBytes: *maxInflight,
					KV:                      kvstore.Config{MemTableBytes: *kvMemtable, ValueThresholdBytes: *kvValueThreshold, BlockCacheBytes: *kvBlockCache, IndexCacheBytes: *kvIndexCache},
					KVBufferBytes:           *kvBuffer,
					KVRowCacheBytes:         *kvRowCache,
					RaftSnapshotInterval:    *snapshotInterval, Logger: logger,
				})
				if err != nil {
					return err
				}
				return srv.Run(ctx)
			}
		}}
}

// nextPort returns addr with its port plus one.
func nextPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("bad --listen %q: %v", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 || p >= 65535 {
		return "", fmt.Errorf("give --gossip explicitly when --listen has port %q", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}
