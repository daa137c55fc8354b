package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
	"github.com/floedb/floe/transport/tlsconf/tlstest"
)

// protoEncoding marshals any proto message: the attacks below send
// requests of every RPC without the generated clients.
type protoEncoding struct{}

func (protoEncoding) Marshal(msg drpc.Message) ([]byte, error) {
	return proto.Marshal(msg.(proto.Message))
}

func (protoEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	return proto.Unmarshal(buf, msg.(proto.Message))
}

// secureFixture is a secure 3-node cluster with a log table shop.orders,
// user alice (password, read and write on it) and bob (password, write on
// it), and node 1 serving HTTP.
type secureFixture struct {
	c        *Cluster
	admin    *client.Client
	httpAddr string
	ctx      context.Context
}

const (
	alicePassword = "alice-secret"
	bobPassword   = "bob-secret"
)

func startSecureFixture(t *testing.T) *secureFixture {
	t.Helper()
	httpAddr := freeAddr(t)
	c := StartCluster(t, 3, ClusterOptions{Secure: true, NodeArgs: map[uint32][]string{1: {"--http", httpAddr}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	f := &secureFixture{c: c, admin: c.Client(ctx), httpAddr: httpAddr, ctx: ctx}
	adm := f.admin.Admin()
	must(t, adm.CreateDatabase(ctx, "shop"))
	_, err := adm.CreateTable(ctx, client.TableSpec{Database: "shop", Name: "orders", Schema: wireSchema, Buckets: 1})
	must(t, err)
	must(t, adm.CreateUser(ctx, "alice", alicePassword))
	must(t, adm.CreateUser(ctx, "bob", bobPassword))
	_, err = adm.AddACLs(ctx,
		client.ACL{Principal: "user:alice", Resource: "table", Name: "shop.orders", Operation: "read"},
		client.ACL{Principal: "user:alice", Resource: "table", Name: "shop.orders", Operation: "write"},
		client.ACL{Principal: "user:bob", Resource: "table", Name: "shop.orders", Operation: "write"})
	must(t, err)
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pool dials the cluster with cfg's TLS and credentials, for raw calls.
func (f *secureFixture) pool(t *testing.T, cfg client.Config) *transport.Pool {
	t.Helper()
	pc := transport.PoolConfig{TLS: cfg.TLS}
	if cfg.User != "" {
		auth, err := transport.ScramAuthenticator(cfg.User, cfg.Password)
		must(t, err)
		pc.Authenticate = auth
	}
	p := transport.NewPool(pc)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// everyRPC lists the RPCs a node serves.
func everyRPC() []string {
	var out []string
	for _, desc := range []drpc.Description{pb.DRPCMetaDescription{}, pb.DRPCTabletDescription{}} {
		for i := range desc.NumMethods() {
			rpc, _, _, _, _ := desc.Method(i)
			out = append(out, rpc)
		}
	}
	return out
}

// rawCall makes one call of rpc with an empty request and returns its
// error.
func rawCall(ctx context.Context, conn drpc.Conn, rpc string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := conn.NewStream(ctx, rpc, protoEncoding{})
	if err != nil {
		return err
	}
	defer stream.Close()
	// A send may fail once the node has refused the call: the receive
	// says why.
	sendErr := stream.MsgSend(&pb.HelloRequest{}, protoEncoding{})
	_ = stream.CloseSend()
	if err := stream.MsgRecv(&pb.HelloResponse{}, protoEncoding{}); err != nil {
		return err
	}
	return sendErr
}

func TestSecureClusterRefusesAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	f := startSecureFixture(t)
	ctx, c := f.ctx, f.c
	addr := c.Nodes[1].Addr
	before, err := f.admin.Admin().ClusterStatus(ctx)
	must(t, err)

	t.Run("every RPC without credentials", func(t *testing.T) {
		anon := f.pool(t, client.Config{TLS: mustTLS(t, c.Sec.CA.CAFile, "", "")})
		plain := transport.NewPool(transport.PoolConfig{})
		defer plain.Close()
		for _, rpc := range everyRPC() {
			if err := rawCall(ctx, anon.Conn(addr), rpc); !errors.Is(err, transport.ErrUnauthenticated) {
				t.Errorf("%s over TLS without credentials: %v, want UNAUTHENTICATED", rpc, err)
			}
			if err := rawCall(ctx, plain.Conn(addr), rpc); !errors.Is(err, transport.ErrUnauthenticated) ||
				!strings.Contains(err.Error(), "requires TLS") {
				t.Errorf("%s in plaintext: %v, want UNAUTHENTICATED: requires TLS", rpc, err)
			}
		}
	})

	t.Run("internal RPCs from a client identity", func(t *testing.T) {
		// Even the super-user is not a node.
		admin := f.pool(t, c.Sec.Config(t, "admin"))
		meta := pb.NewDRPCMetaClient(admin.Conn(addr))
		_, err := meta.Propose(ctx, &pb.ProposeRequest{Command: &pb.Command{
			Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: "evil"}}}})
		wantNodesOnly(t, "Propose", err)
		_, err = meta.Join(ctx, &pb.JoinRequest{NodeId: 9, RaftAddress: "127.0.0.1:1", Incarnation: "x"})
		wantNodesOnly(t, "Join", err)
		_, err = meta.Propose(ctx, &pb.ProposeRequest{Command: &pb.Command{Op: &pb.Command_RegisterNode{
			RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{Id: 9, Roles: []string{"tablet"}, RpcAddress: "127.0.0.1:1", Incarnation: "x"}}}}})
		wantNodesOnly(t, "Propose(RegisterNode)", err)
		_, err = meta.AdjustIsr(ctx, &pb.AdjustIsrRequest{Change: &pb.AdjustIsr{TableId: 1}})
		wantNodesOnly(t, "AdjustIsr", err)
		tab := pb.NewDRPCTabletClient(admin.Conn(addr))
		_, err = tab.Fetch(ctx, &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{TableId: 1}}})
		wantNodesOnly(t, "a follower's Fetch", err)
	})

	t.Run("administration without an ACL", func(t *testing.T) {
		alice := f.pool(t, c.Sec.PasswordConfig(t, "alice", alicePassword))
		meta := pb.NewDRPCMetaClient(alice.Conn(addr))
		_, err := meta.DrainNode(ctx, &pb.DrainNodeRequest{NodeId: 1})
		wantNotAuthorized(t, "DrainNode", err)
		_, err = meta.DropDatabase(ctx, &pb.DropDatabaseRequest{Name: "shop", Cascade: true})
		wantNotAuthorized(t, "DropDatabase", err)
		_, err = meta.RemoveNode(ctx, &pb.RemoveNodeRequest{NodeId: 3})
		wantNotAuthorized(t, "RemoveNode", err)
		_, err = meta.AddAcls(ctx, &pb.AddAclsRequest{Entries: []*pb.AclEntry{{Principal: "user:alice", Host: "*",
			ResourceType: pb.AclResourceType_ACL_RESOURCE_CLUSTER, Pattern: pb.AclPatternType_ACL_PATTERN_LITERAL,
			Operation: pb.AclOperation_ACL_OPERATION_ALL, Permission: pb.AclPermission_ACL_PERMISSION_ALLOW}}})
		wantNotAuthorized(t, "AddAcls (granting itself everything)", err)
	})

	t.Run("forged Raft", func(t *testing.T) {
		st, err := f.admin.Admin().ClusterStatus(ctx)
		must(t, err)
		hello := append([]byte(transport.RaftHeader), byte(len(st.ClusterID)))
		hello = append(append(hello, st.ClusterID...), 0)
		// Plaintext: the node answers that it requires TLS.
		raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
		must(t, err)
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(10 * time.Second))
		raw.Write(hello)
		var ack [1]byte
		if _, err := io.ReadFull(raw, ack[:]); err != nil || ack[0] != transport.RaftTLSRequired {
			t.Errorf("plaintext Raft: answer %#x, %v; want the requires-TLS byte", ack[0], err)
		}
		// A user certificate of the cluster's own CA: closed before Raft
		// reads a byte of it.
		for name, files := range map[string]tlsconf.Files{
			"user certificate":         c.Sec.UserFiles(t, "mallory"),
			"another CA's node (id 1)": tlstest.NewCA(t, "impostor").Node(t, 1),
		} {
			cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
			must(t, err)
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
				&tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true})
			if err != nil {
				continue // refused in the handshake: fine
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			conn.Write(hello)
			n, err := io.ReadFull(conn, ack[:])
			conn.Close()
			if n == 1 && ack[0] == 0x01 {
				t.Errorf("%s: the Raft handshake was accepted", name)
			}
			_ = err
		}
		after, err := f.admin.Admin().ClusterStatus(ctx)
		must(t, err)
		if after.Term != before.Term || after.Leader != before.Leader {
			t.Errorf("term %d → %d, leader %d → %d: forged Raft traffic moved the cluster", before.Term, after.Term, before.Leader, after.Leader)
		}
	})

	t.Run("a gossip member without the key", func(t *testing.T) {
		st, err := f.admin.Admin().ClusterStatus(ctx)
		must(t, err)
		g, err := gossip.New(gossip.Config{NodeID: 99, BindAddress: freeAddr(t), RPCAddress: "127.0.0.1:1", Roles: []string{"tablet"},
			Incarnation: "intruder", ClusterID: st.ClusterID, Profile: gossip.ProfileLocal})
		must(t, err)
		defer g.Close()
		jctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := g.Join(jctx, []string{c.Nodes[0].Gossip}); err == nil {
			t.Fatal("a gossip member without the key joined")
		}
		if ms := g.Members(); len(ms) > 1 {
			t.Fatalf("the intruder sees %d members", len(ms))
		}
	})

	t.Run("a reused writer id", func(t *testing.T) {
		tableID, leader := bucketLeader(t, ctx, c, "shop", "orders", 0)
		alice := f.pool(t, c.Sec.PasswordConfig(t, "alice", alicePassword))
		bob := f.pool(t, c.Sec.PasswordConfig(t, "bob", bobPassword))
		w, err := pb.NewDRPCMetaClient(alice.Conn(addr)).AllocateWriterId(ctx, &pb.AllocateWriterIdRequest{RequestId: []byte("alice-w1")})
		must(t, err)
		if len(w.WriterToken) == 0 {
			t.Fatal("no writer token on a cluster with authentication")
		}
		batch := func(seq int32, tag string) []byte { return idempotentBatch(t, int64(w.WriterId), seq, tag) }
		// Bob sends batch 0 of alice's writer id: with alice's token, with
		// none, with his own made-up one. All refused.
		for name, token := range map[string][]byte{"alice's token": w.WriterToken, "no token": nil, "a made-up token": bytes.Repeat([]byte{1}, 16)} {
			_, err := pb.NewDRPCTabletClient(bob.Conn(leader)).Produce(ctx, &pb.ProduceRequest{TableId: tableID, Acks: -1,
				Batch: batch(0, "bob"), WriterToken: token})
			wantNotAuthorized(t, "bob's batch with "+name, err)
		}
		// Alice's own batch 0 is taken as new, not as a duplicate.
		resp, err := pb.NewDRPCTabletClient(alice.Conn(leader)).Produce(ctx, &pb.ProduceRequest{TableId: tableID, Acks: -1,
			Batch: batch(0, "alice"), WriterToken: w.WriterToken})
		must(t, err)
		if resp.Duplicate {
			t.Fatal("alice's batch was dropped as a duplicate of one bob sent")
		}
	})

	t.Run("HTTP surfaces", func(t *testing.T) {
		base := "https://" + f.httpAddr
		get := func(hc *http.Client, path, user, password string) (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			must(t, err)
			if user != "" {
				req.SetBasicAuth(user, password)
			}
			resp, err := hc.Do(req)
			must(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return resp.StatusCode, string(body)
		}
		anon := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, c.Sec.CA.CAFile, "", "")}}
		adminFiles := c.Sec.UserFiles(t, "admin")
		admin := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, adminFiles.CA, adminFiles.Cert, adminFiles.Key)}}
		if code, _ := get(anon, "/healthz", "", ""); code != http.StatusOK {
			t.Errorf("/healthz: %d, want 200 (open to load balancers)", code)
		}
		for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/", "/metrics"} {
			if code, _ := get(anon, path, "", ""); code != http.StatusUnauthorized {
				t.Errorf("%s without credentials: %d, want 401", path, code)
			}
			if code, _ := get(anon, path, "alice", "wrong"); code != http.StatusUnauthorized {
				t.Errorf("%s with a wrong password: %d, want 401", path, code)
			}
			if code, _ := get(anon, path, "alice", alicePassword); code != http.StatusForbidden {
				t.Errorf("%s by alice (no ACL): %d, want 403", path, code)
			}
		}
		code, body := get(admin, "/debug/pprof/cmdline", "", "")
		if code != http.StatusOK || !strings.Contains(body, "serve") {
			t.Errorf("/debug/pprof/cmdline as admin: %d %q", code, body)
		}
		code, body = get(admin, "/metrics", "", "")
		if code != http.StatusOK || !strings.Contains(body, `floe_auth_failures_total{reason="bad_credentials"}`) {
			t.Errorf("/metrics as admin: %d, failures counted: %v", code, strings.Contains(body, "floe_auth_failures_total"))
		}
	})

	t.Run("a certificate of another CA", func(t *testing.T) {
		other := tlstest.NewCA(t, "another cluster").User(t, "admin")
		cert, err := tls.LoadX509KeyPair(other.Cert, other.Key)
		must(t, err)
		tc := mustTLS(t, c.Sec.CA.CAFile, "", "")
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		p := transport.NewPool(transport.PoolConfig{TLS: tc})
		defer p.Close()
		if err := rawCall(ctx, p.Conn(addr), "/floe.v1.Meta/ListDatabases"); err == nil {
			t.Fatal("a client certificate of another CA was accepted")
		}
	})

	t.Run("passwords", func(t *testing.T) {
		// Bob may not change alice's password; alice may change her own,
		// and then only the new one signs her in.
		bob, err := client.ConnectWith(ctx, c.Sec.PasswordConfig(t, "bob", bobPassword, addr))
		must(t, err)
		defer bob.Close()
		wantNotAuthorized(t, "bob changing alice's password", bob.Admin().SetPassword(ctx, "alice", "by-bob"))
		alice, err := client.ConnectWith(ctx, c.Sec.PasswordConfig(t, "alice", alicePassword, addr))
		must(t, err)
		defer alice.Close()
		must(t, alice.Admin().SetPassword(ctx, "alice", "alice-new"))
		wantNotAuthorized(t, "alice creating a user", alice.Admin().CreateUser(ctx, "carol", "x"))
		waitFor(t, 10*time.Second, "the old password to stop working", func() bool {
			cl, err := client.ConnectWith(ctx, c.Sec.PasswordConfig(t, "alice", alicePassword, addr))
			if err == nil {
				cl.Close()
			}
			return errors.Is(err, transport.ErrUnauthenticated)
		})
		cl, err := client.ConnectWith(ctx, c.Sec.PasswordConfig(t, "alice", "alice-new", addr))
		must(t, err)
		cl.Close()
	})

	after, err := f.admin.Admin().ClusterStatus(ctx)
	must(t, err)
	if len(after.Voters) != 3 || len(after.Nodes) != 3 {
		t.Errorf("after the attacks: %d voters, %d nodes; want 3 and 3", len(after.Voters), len(after.Nodes))
	}
	for _, n := range after.Nodes {
		if n.Draining || !n.Alive {
			t.Errorf("node %d after the attacks: draining %v, alive %v", n.ID, n.Draining, n.Alive)
		}
	}
	dbs, err := f.admin.Admin().ListDatabases(ctx)
	must(t, err)
	if len(dbs) != 1 || dbs[0].Name != "shop" {
		t.Errorf("databases after the attacks: %v, want shop alone", dbs)
	}
}

// TestACLRevocationReachesEveryNode: a read allowed to alice is refused on
// every node once the ACL is removed; how long that took is logged (the
// note of the issue reports it).
func TestACLRevocationReachesEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	f := startSecureFixture(t)
	ctx, c := f.ctx, f.c
	tableID, _ := bucketLeader(t, ctx, c, "shop", "orders", 0)
	read := func(nd *Node, p *transport.Pool) error {
		_, err := pb.NewDRPCTabletClient(p.Conn(nd.Addr)).Fetch(ctx, &pb.FetchRequest{
			Buckets: []*pb.FetchBucket{{TableId: tableID, Offset: 0, LeaderEpoch: -1}}, MaxWaitMs: 0})
		return err
	}
	pools := map[uint32]*transport.Pool{}
	for _, nd := range c.Nodes {
		pools[nd.ID] = f.pool(t, c.Sec.PasswordConfig(t, "alice", alicePassword))
		// Allowed now (the fetch may fail otherwise: not the leader).
		waitFor(t, 10*time.Second, "alice's read to be allowed", func() bool {
			return !errors.Is(read(nd, pools[nd.ID]), transport.ErrNotAuthorized)
		})
	}
	start := time.Now()
	n, err := f.admin.Admin().RemoveACLs(ctx, client.ACL{Principal: "user:alice", Resource: "table", Name: "shop.orders", Operation: "read"})
	must(t, err)
	if n != 1 {
		t.Fatalf("removed %d entries, want 1", n)
	}
	var slowest time.Duration
	for _, nd := range c.Nodes {
		waitFor(t, 10*time.Second, "the revocation on every node", func() bool {
			return errors.Is(read(nd, pools[nd.ID]), transport.ErrNotAuthorized)
		})
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("revocation refused alice's reads on all %d nodes %v after the ACL removal was sent", len(c.Nodes), slowest)
}

// TestSecureClusterRotatesWithoutRestart replaces a node's certificate
// files and rotates the gossip key (add, use, remove) while the cluster
// runs; nothing restarts and every node stays alive.
func TestSecureClusterRotatesWithoutRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{Secure: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := c.Client(ctx)

	// A new certificate for node 1, same id: new connections see it.
	files := c.Sec.NodeFiles(t, 1)
	leaf, err := c.Sec.CA.CA.IssueNode(1, []string{"127.0.0.1"}, 48*time.Hour)
	must(t, err)
	replaceFile(t, files.Key, leaf.KeyPEM)
	replaceFile(t, files.Cert, leaf.CertPEM)
	block, _ := pem.Decode(leaf.CertPEM)
	waitFor(t, 20*time.Second, "node 1 to serve its new certificate", func() bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", c.Nodes[0].Addr,
			&tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true})
		if err != nil {
			return false
		}
		defer conn.Close()
		return bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes)
	})

	// The gossip key: add a new one, use it, remove the old one.
	oldKey, err := os.ReadFile(c.Sec.GossipKey)
	must(t, err)
	newKey, err := gossip.NewKey()
	must(t, err)
	old := strings.TrimSpace(string(oldKey))
	for step, keys := range [][]string{{old, newKey}, {newKey, old}, {newKey}} {
		reloads := gossipReloads(t, c)
		replaceFile(t, c.Sec.GossipKey, []byte(strings.Join(keys, "\n")+"\n"))
		waitFor(t, 20*time.Second, "every node to reload its gossip keys", func() bool {
			now := gossipReloads(t, c)
			for i := range now {
				if now[i] <= reloads[i] {
					return false
				}
			}
			return true
		})
		waitFor(t, 20*time.Second, "every node alive after rotation step", func() bool {
			st, err := admin.Admin().ClusterStatus(ctx)
			if err != nil || len(st.Nodes) != 3 {
				return false
			}
			return !slices.ContainsFunc(st.Nodes, func(n client.Node) bool { return !n.Alive })
		})
		t.Logf("gossip key rotation step %d done", step+1)
	}
	// A node restarted now needs only the new key: it rejoins.
	c.Stop(c.Nodes[2])
	c.Restart(c.Nodes[2])
	c.WaitRegistered(60 * time.Second)
}

// gossipReloads counts each node's "gossip keys reloaded" log lines.
func gossipReloads(t *testing.T, c *Cluster) []int {
	out := make([]int, len(c.Nodes))
	for i, nd := range c.Nodes {
		data, _ := os.ReadFile(nd.logPath)
		out[i] = bytes.Count(data, []byte("gossip keys reloaded"))
	}
	return out
}

// replaceFile writes data to path atomically.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	must(t, os.WriteFile(path+".tmp", data, 0o600))
	must(t, os.Rename(path+".tmp", path))
}

func mustTLS(t testing.TB, ca, cert, key string) *tls.Config {
	t.Helper()
	tc, err := client.TLSFromFiles(ca, cert, key)
	must(t, err)
	return tc
}

func wantNodesOnly(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, transport.ErrNotAuthorized) || !strings.Contains(err.Error(), "nodes of the cluster only") {
		t.Errorf("%s by a client: %v, want NOT_AUTHORIZED for nodes only", what, err)
	}
}

func wantNotAuthorized(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, transport.ErrNotAuthorized) {
		t.Errorf("%s: %v, want NOT_AUTHORIZED", what, err)
	}
}

// idempotentBatch is one row of writer id, sequence seq.
func idempotentBatch(t *testing.T, writerID int64, seq int32, tag string) []byte {
	t.Helper()
	s, err := record.ParseSchema(wireSchema)
	must(t, err)
	enc, err := record.NewRowEncoder(s)
	must(t, err)
	enc.SetInt64(0, int64(seq))
	enc.SetString(1, tag)
	row, err := enc.Finish(nil)
	must(t, err)
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: 1, Format: record.PayloadRows, AppendOnly: true,
		HasWriter: true, WriterID: writerID, Sequence: seq}, 0)
	must(t, b.Append(record.AppendOnly, row))
	out, err := b.Build()
	must(t, err)
	return bytes.Clone(out)
}
