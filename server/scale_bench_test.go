//go:build unix

package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The catalog of BenchmarkMetaAt100kBuckets: 100 tables of 1,000 buckets,
// three replicas each, over 30 tablet nodes (10,000 replicas a node).
const (
	benchTables       = 100
	benchBuckets      = 1000
	benchTabletNodes  = 30
	benchReplication  = 3
	benchSmallTables  = 100 // created and timed once the catalog is full
	benchSmallBuckets = 10
	benchIdleWindow   = 3 * time.Second
)

// BenchmarkMetaAt100kBuckets runs a one-node metadata cluster (Raft, state
// machine, controller, RPC) with 100,000 buckets in its catalog and reports
// what a client and the node see: table creation through RPC and Raft, a
// tablet node's registration and first image, the Raft snapshot and its
// restore, and the node's CPU while nothing changes. Run it once:
//
//	go test ./server/ -run '^$' -bench MetaAt100kBuckets -benchtime=1x
func BenchmarkMetaAt100kBuckets(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	s, _ := startMetaNode(b, ctx)
	n := s.meta.Node()
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	meta := pb.NewDRPCMetaClient(pool.Conn(s.Addr()))

	propose := func(cmd *pb.Command) *pb.CommandResult {
		b.Helper()
		cmd.RequestId = []byte(newID())
		res, err := n.Propose(ctx, cmd)
		if err == nil {
			err = metastate.ResultError(res)
		}
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	tablet := func(id uint32) *pb.Command {
		return &pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
			Id: id, Roles: []string{RoleTablet}, RpcAddress: fmt.Sprintf("127.0.0.1:%d", 20000+id), Incarnation: "bench"}}}}
	}
	for id := uint32(2); id < 2+benchTabletNodes; id++ {
		propose(tablet(id))
	}
	if _, err := meta.CreateDatabase(ctx, &pb.CreateDatabaseRequest{Name: "db"}); err != nil {
		b.Fatal(err)
	}
	create := func(name string, buckets int32) time.Duration {
		b.Helper()
		start := time.Now()
		_, err := meta.CreateTable(ctx, &pb.CreateTableRequest{Database: "db", Name: name,
			Schema: "id BIGINT NOT NULL, v STRING", Buckets: buckets, Replication: benchReplication})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var big []time.Duration
	for i := range benchTables {
		big = append(big, create(fmt.Sprintf("big%03d", i), benchBuckets))
	}
	b.ResetTimer()

	var small []time.Duration
	for i := range benchSmallTables {
		small = append(small, create(fmt.Sprintf("small%03d", i), benchSmallBuckets))
	}
	report := func(d time.Duration, unit string) { b.ReportMetric(float64(d.Microseconds())/1000, unit) }
	report(percentile(big, 50), "create-1000-p50-ms")
	report(percentile(small, 50), "create-10-p50-ms")
	report(percentile(small, 99), "create-10-p99-ms")

	start := time.Now()
	propose(tablet(2)) // a restart: every bucket node 2 leads gets a new epoch
	report(time.Since(start), "register-again-ms")
	start = time.Now()
	propose(tablet(2 + benchTabletNodes)) // a node with no buckets yet
	report(time.Since(start), "register-new-ms")

	start = time.Now()
	img, err := n.State().Image()
	if err != nil {
		b.Fatal(err)
	}
	report(time.Since(start), "image-ms")
	b.ReportMetric(float64(proto.Size(img))/(1<<20), "image-MiB")

	start = time.Now()
	stream, err := meta.WatchMetadata(ctx, &pb.WatchMetadataRequest{NodeId: 2})
	if err != nil {
		b.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		b.Fatal(err)
	}
	report(time.Since(start), "watch-image-ms")
	b.ReportMetric(float64(proto.Size(first))/(1<<20), "watch-image-MiB")
	stream.Close()

	start = time.Now()
	if err := n.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	report(time.Since(start), "snapshot-ms")
	snap := newestSnapshot(b, filepath.Join(s.cfg.DataDir, "meta", "snapshots"))
	info, err := os.Stat(snap)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(info.Size())/(1<<20), "snapshot-MiB")
	report(restoreTime(b, snap), "restore-ms")

	// The node idles: no command, no watcher. Whatever CPU it uses now is
	// the controller's and Raft's upkeep.
	time.Sleep(time.Second)
	cpu0, wall0 := processCPU(b), time.Now()
	time.Sleep(benchIdleWindow)
	cpu, wall := processCPU(b)-cpu0, time.Since(wall0)
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "idle-cpu-%")
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// newestSnapshot is the state file of the newest Raft snapshot in dir.
func newestSnapshot(b *testing.B, dir string) string {
	b.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var newest string
	var newestAt time.Time
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		if info.ModTime().After(newestAt) {
			newest, newestAt = e.Name(), info.ModTime()
		}
	}
	if newest == "" {
		b.Fatal("no snapshot")
	}
	return filepath.Join(dir, newest, "state.bin")
}

// restoreTime is how long a fresh state machine takes to restore the
// snapshot file, as a follower that receives it does.
func restoreTime(b *testing.B, snap string) time.Duration {
	b.Helper()
	st, err := metastate.Open(filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	f, err := os.Open(snap)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	if err := st.Restore(f); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// processCPU is the CPU time, user and system, this process used so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
