package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/server"
)

// devNodeID is the id of the one node `floe dev` runs.
const devNodeID = 1

// devSpec is `floe dev`: a one-node cluster with both roles, the quickest
// way to try Floe. Data goes to --data-dir, or to a temporary folder removed on exit.
func devSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "dev [--data-dir DIR] [--listen ADDR] [--gossip ADDR] [--http ADDR] [--recover]",
		summary: "run a one-node cluster for trying Floe out",
		define: func(fs *flag.FlagSet) runFunc {
			dataDir := fs.String("data-dir", "", "keep data here (default: a temporary folder, removed on exit)")
			listen := fs.String("listen", "127.0.0.1:7700", "RPC address")
			gossipAddr := fs.String("gossip", "", "gossip address (default: the --listen port + 1 when free, else any free port)")
			httpAddr := fs.String("http", "", "address for /healthz, /readyz, /metrics (Prometheus) and /debug/pprof/ (default: none)")
			logLevel := logLevelVar(fs, "warn")
			recoverAlone := fs.Bool("recover", false, "with --data-dir: make this node the only metadata voter again before starting "+
				"(after an add-voter left the metadata without a quorum); safe while no other node ever ran with this cluster's data")
			remote := defineRemoteFlags(fs, "tier sealed log segments to this folder (default: DATA/remote)", false)
			return func(ctx context.Context, pos []string) error {
				var err error
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				var level slog.Level
				if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
					return fmt.Errorf("%w: --log-level: %v", errUsage, err)
				}
				dir, kept := *dataDir, "kept after exit"
				if *recoverAlone {
					if dir == "" {
						return fmt.Errorf("%w: --recover needs the --data-dir of the cluster to recover", errUsage)
					}
					before, err := server.RecoverMeta(dir, devNodeID, []raftmeta.Server{{ID: devNodeID, Address: *listen, Voter: true}})
					if err != nil {
						return err
					}
					fmt.Fprintf(env.stdout, "recovered: the metadata voters were %s; node %d is now the only one\n", describeVoters(before), devNodeID)
				}
				if dir == "" {
					if dir, err = os.MkdirTemp("", "floe-dev-"); err != nil {
						return err
					}
					defer os.RemoveAll(dir)
					kept = "temporary, deleted on exit; --data-dir DIR keeps data"
				}
				gossip := *gossipAddr
				if gossip == "" {
					gossip = devGossipAddr(*listen)
				}
				store, err := remote.open(ctx, filepath.Join(dir, "remote"))
				if err != nil {
					return err
				}
				start := time.Now()
				srv, err := server.New(server.Config{
					Remote: store, TieringInterval: *remote.interval,
					NodeID: devNodeID, Roles: []string{server.RoleMeta, server.RoleTablet}, DataDir: dir, Listen: *listen,
					Gossip: gossip, HTTP: *httpAddr, BootstrapExpect: 1,
					Logger: slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level})),
				})
				if err != nil {
					return err
				}
				done := make(chan error, 1)
				go func() { done <- srv.Run(ctx) }()
				// Ready means registered with the tablet following the metadata from
				// its registration on: a table created from now on is placed on it.
				select {
				case <-srv.Ready():
					fmt.Fprintf(env.stdout, "Floe dev cluster ready in %v: node 1 registered, its tablet follows the metadata\n"+
						"  address:  %s\n  data:     %s (%s)\n  remote:   %s (sealed log segments, every %v)\n  try:      floe cluster status --server %s\nCtrl-C stops it.\n",
						time.Since(start).Round(time.Millisecond), srv.Addr(), dir, kept, store, *remote.interval, srv.Addr())
				case err := <-done:
					return err
				}
				return <-done
			}
		}}
}

// devGossipAddr is the gossip address of a dev node listening on listen:
// the next port when it is free for both TCP and UDP (memberlist uses
// both), else any free port: a dev cluster has no peers that need to guess
// it.
func devGossipAddr(listen string) string {
	next, err := nextPort(listen)
	if err != nil {
		return "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", next)
	if err != nil {
		return hostOnly(next)
	}
	l.Close()
	u, err := net.ListenPacket("udp", next)
	if err != nil {
		return hostOnly(next)
	}
	u.Close()
	return next
}

// hostOnly is addr with port 0: the system picks a free one.
func hostOnly(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(host, "0")
}
