package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// hostileTarget is what the attacks aim at: the node's address and the
// tables the setup created.
type hostileTarget struct {
	addr         string
	logTableID   uint64
	logSchemaID  int16
	kvTableID    uint64
	dialTimeout  time.Duration
	callDeadline time.Duration
}

// hostileAttack is one kind of hostile traffic. A request attack's run
// sends one request on a connection of its own and returns when it is
// answered (or fails); a connection attack's run opens its connections and
// holds them until ctx ends.
type hostileAttack struct {
	name  string
	about string
	// conns is how many connections run it at once: 0 takes --conns.
	conns int
	// holds: a connection attack (run returns when ctx ends).
	holds bool
	run   func(ctx context.Context, t *hostileTarget) error
}

// hostileAttacks are the attacks bench hostile knows, in the order it runs
// them.
func hostileAttacks() []hostileAttack {
	return []hostileAttack{
		{name: "zstd-bomb", about: "a produce of ~16 KiB whose zstd payload claims and inflates to 1 GiB, and one of 8 KiB inflating to 256 MiB with no claimed size",
			run: attackZstdBomb},
		{name: "fetch-buckets", about: "a fetch naming 1M buckets", run: attackFetchBuckets},
		{name: "lookup-keys", about: "a lookup of 7M empty keys", run: attackLookupKeys},
		{name: "hello-peers", about: "a Meta.Hello carrying 500k peers", run: attackHelloPeers},
		{name: "db-name", about: "a create database with a 15 MiB name", run: attackDatabaseName},
		{name: "writes-half", about: "a Writes stream sending half of a 15 MiB message, then stalling", holds: true, run: attackWritesHalf},
		{name: "raft-idle", about: "500 idle connections to the Raft port", conns: 500, holds: true, run: attackIdle},
		{name: "raft-prefix", about: "64 connections sending only the Raft prefix", conns: 64, holds: true, run: attackRaftPrefix},
	}
}

// HostileAttackNames are the names of the attacks bench hostile knows, in
// the order it runs them.
func HostileAttackNames() []string {
	var names []string
	for _, a := range hostileAttacks() {
		names = append(names, a.name)
	}
	return names
}

// chooseAttacks are the attacks of names, in their order.
func chooseAttacks(names []string) ([]hostileAttack, error) {
	all := hostileAttacks()
	var out []hostileAttack
	for _, name := range names {
		i := slices.IndexFunc(all, func(a hostileAttack) bool { return a.name == name })
		if i < 0 {
			return nil, fmt.Errorf("no attack %q", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// unary runs call on a plain DRPC connection of its own (a default DRPC
// client, as an attacker would have).
func unary(ctx context.Context, t *hostileTarget, call func(ctx context.Context, conn *drpcconn.Conn) error) error {
	raw, err := (&net.Dialer{Timeout: t.dialTimeout}).DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return err
	}
	conn := drpcconn.New(drpcmigrate.NewHeaderConn(raw, drpcmigrate.DRPCHeader))
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, t.callDeadline)
	defer cancel()
	return call(ctx, conn)
}

// Batch header positions (storage/record's package documentation).
const (
	hostileLengthPos     = 8
	hostileCRCPos        = 25
	hostileSchemaIDPos   = 29
	hostileAttributesPos = 31
	hostileWriterIDPos   = 37
	hostileSequencePos   = 45
	hostileCountPos      = 49
	hostileZstdAppend    = 1<<3 | 0x40 // zstd compression, append-only rows
)

// zstdBombBatch is a one-record log batch whose zstd payload is blocks
// RLE blocks of 128 KiB of zeros, 4 bytes each, with or without the
// content size claimed in the frame header.
func zstdBombBatch(schemaID int16, blocks int, claim bool) []byte {
	const block = 128 << 10
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if claim {
		frame = append(frame, 0xc0, 0x38)
		frame = binary.LittleEndian.AppendUint64(frame, uint64(blocks)*block)
	} else {
		frame = append(frame, 0x00, 0x38)
	}
	for i := range blocks {
		h := uint32(1<<1 | block<<3)
		if i == blocks-1 {
			h |= 1
		}
		frame = append(frame, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	b := make([]byte, record.HeaderSize, record.HeaderSize+len(frame))
	b = append(b, frame...)
	binary.BigEndian.PutUint32(b[hostileLengthPos:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint16(b[hostileSchemaIDPos:], uint16(schemaID))
	binary.BigEndian.PutUint16(b[hostileAttributesPos:], hostileZstdAppend)
	binary.BigEndian.PutUint64(b[hostileWriterIDPos:], ^uint64(0))
	binary.BigEndian.PutUint32(b[hostileSequencePos:], ^uint32(0))
	binary.BigEndian.PutUint32(b[hostileCountPos:], 1)
	binary.BigEndian.PutUint32(b[hostileCRCPos:], crc32.Checksum(b[hostileSchemaIDPos:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// attackZstdBomb sends both bombs; it returns the first refusal.
func attackZstdBomb(ctx context.Context, t *hostileTarget) error {
	var first error
	for _, batch := range [][]byte{zstdBombBatch(t.logSchemaID, 8192, true), zstdBombBatch(t.logSchemaID, 2048, false)} {
		err := unary(ctx, t, func(ctx context.Context, conn *drpcconn.Conn) error {
			_, err := pb.NewDRPCTabletClient(conn).Produce(ctx, &pb.ProduceRequest{TableId: t.logTableID, Acks: 1, Batch: batch})
			return err
		})
		if first == nil {
			first = err
		}
	}
	return first
}

// The large requests are built once and shared by every connection: the
// benchmark measures the node, not its own allocations.
var (
	fetchBucketsReq = sync.OnceValue(func() *pb.FetchRequest {
		req := &pb.FetchRequest{MaxWaitMs: 0, Buckets: make([]*pb.FetchBucket, 1_000_000)}
		for i := range req.Buckets {
			req.Buckets[i] = &pb.FetchBucket{TableId: 1<<40 + uint64(i), LeaderEpoch: -1, LastFetchedEpoch: -1}
		}
		return req
	})
	lookupKeysReq = sync.OnceValues(func() ([][]byte, error) { return make([][]byte, 7_000_000), nil })
	helloPeersReq = sync.OnceValue(func() *pb.HelloRequest {
		req := &pb.HelloRequest{NodeId: 1 << 30, RpcAddress: "10.255.255.1:7700", Roles: []string{"meta"}, Peers: make([]*pb.PeerInfo, 500_000)}
		for i := range req.Peers {
			req.Peers[i] = &pb.PeerInfo{NodeId: uint32(1<<30 + 1 + i), RpcAddress: fmt.Sprintf("10.%d.%d.%d:7700", i>>16&255, i>>8&255, i&255), Roles: []string{"meta"}}
		}
		return req
	})
	databaseNameReq = sync.OnceValue(func() *pb.CreateDatabaseRequest {
		return &pb.CreateDatabaseRequest{Name: strings.Repeat("n", 15<<20)}
	})
)

func attackFetchBuckets(ctx context.Context, t *hostileTarget) error {
	req := fetchBucketsReq()
	return unary(ctx, t, func(ctx context.Context, conn *drpcconn.Conn) error {
		_, err := pb.NewDRPCTabletClient(conn).Fetch(ctx, req)
		return err
	})
}

func attackLookupKeys(ctx context.Context, t *hostileTarget) error {
	keys, _ := lookupKeysReq()
	req := &pb.LookupRequest{TableId: t.kvTableID, Keys: keys}
	return unary(ctx, t, func(ctx context.Context, conn *drpcconn.Conn) error {
		_, err := pb.NewDRPCTabletClient(conn).Lookup(ctx, req)
		return err
	})
}

func attackHelloPeers(ctx context.Context, t *hostileTarget) error {
	req := helloPeersReq()
	return unary(ctx, t, func(ctx context.Context, conn *drpcconn.Conn) error {
		_, err := pb.NewDRPCMetaClient(conn).Hello(ctx, req)
		return err
	})
}

func attackDatabaseName(ctx context.Context, t *hostileTarget) error {
	req := databaseNameReq()
	return unary(ctx, t, func(ctx context.Context, conn *drpcconn.Conn) error {
		_, err := pb.NewDRPCMetaClient(conn).CreateDatabase(ctx, req)
		return err
	})
}

// attackWritesHalf opens a Writes stream, sends the first half of a 15 MiB
// message frame and holds the connection until ctx ends (or the node
// closes it).
func attackWritesHalf(ctx context.Context, t *hostileTarget) error {
	conn, err := (&net.Dialer{Timeout: t.dialTimeout}).DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	out := []byte(drpcmigrate.DRPCHeader)
	id := drpcwire.ID{Stream: 1, Message: 1}
	out = drpcwire.AppendFrame(out, drpcwire.Frame{ID: id, Kind: drpcwire.KindInvoke, Done: true, Data: []byte("/floe.v1.Tablet/Writes")})
	const size = 15 << 20
	id.Message = 2
	hdr := drpcwire.AppendFrame(nil, drpcwire.Frame{ID: id, Kind: drpcwire.KindMessage, Done: true})
	// The frame header as AppendFrame wrote it, but with the full length.
	hdr = hdr[:len(hdr)-1]
	hdr = binary.AppendUvarint(hdr, size)
	out = append(out, hdr...)
	if _, err := conn.Write(out); err != nil {
		return err
	}
	if _, err := conn.Write(make([]byte, size/2)); err != nil {
		return err
	}
	return holdUntilClosed(ctx, conn)
}

// attackIdle opens a connection and sends nothing.
func attackIdle(ctx context.Context, t *hostileTarget) error {
	conn, err := (&net.Dialer{Timeout: t.dialTimeout}).DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	return holdUntilClosed(ctx, conn)
}

// attackRaftPrefix sends the Raft prefix and nothing after it.
func attackRaftPrefix(ctx context.Context, t *hostileTarget) error {
	conn, err := (&net.Dialer{Timeout: t.dialTimeout}).DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(transport.RaftHeader)); err != nil {
		return err
	}
	return holdUntilClosed(ctx, conn)
}

// holdUntilClosed keeps conn open until ctx ends or the node closes it.
func holdUntilClosed(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
