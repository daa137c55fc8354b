package metastate

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// startMs is the Raft append time of a harness's first entry.
const startMs = int64(1_700_000_000_000)

// harness applies commands to a State at increasing indexes and times.
type harness struct {
	t     testing.TB
	s     *State
	path  string
	index uint64
	nowMs int64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{t: t, s: s, path: path, nowMs: startMs}
}

// apply applies cmd at the next index, one second after the previous one.
func (h *harness) apply(cmd *pb.Command) *pb.CommandResult {
	h.t.Helper()
	h.index++
	h.nowMs += 1000
	return h.applyAt(h.index, h.nowMs, cmd)
}

func (h *harness) applyAt(index uint64, nowMs int64, cmd *pb.Command) *pb.CommandResult {
	h.t.Helper()
	data, err := proto.Marshal(cmd)
	if err != nil {
		h.t.Fatal(err)
	}
	res := h.s.Apply(index, nowMs, data)
	if res == nil {
		h.t.Fatalf("Apply(%d) returned nil", index)
	}
	if _, bench := h.t.(*testing.B); !bench {
		checkIndex(h.t, h.s)
	}
	return res
}

// ok applies cmd and fails the test if it is refused.
func (h *harness) ok(cmd *pb.Command) *pb.CommandResult {
	h.t.Helper()
	res := h.apply(cmd)
	if err := ResultError(res); err != nil {
		h.t.Fatalf("index %d: %v", h.index, err)
	}
	return res
}

// tabletNodes registers tablet nodes 1..n.
func (h *harness) tabletNodes(n int) {
	h.t.Helper()
	for i := 1; i <= n; i++ {
		h.ok(registerNode(uint32(i), "", RoleTablet))
	}
}

func initCluster(id string) *pb.Command {
	return &pb.Command{Op: &pb.Command_InitCluster{InitCluster: &pb.InitCluster{ClusterId: id}}}
}

func registerNode(id uint32, rack string, roles ...string) *pb.Command {
	return &pb.Command{Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: &pb.NodeRecord{
		Id: id, Roles: roles, RpcAddress: fmt.Sprintf("10.0.0.%d:7000", id), Rack: rack,
	}}}}
}

func createDB(name string) *pb.Command {
	return &pb.Command{Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: name}}}
}

func dropDB(name string, cascade, ifExists bool) *pb.Command {
	return &pb.Command{Op: &pb.Command_DropDatabase{DropDatabase: &pb.DropDatabase{Name: name, Cascade: cascade, IfExists: ifExists}}}
}

func createTable(c *pb.CreateTable) *pb.Command {
	return &pb.Command{Op: &pb.Command_CreateTable{CreateTable: c}}
}

func dropTable(db, name string, ifExists bool) *pb.Command {
	return &pb.Command{Op: &pb.Command_DropTable{DropTable: &pb.DropTable{Database: db, Name: name, IfExists: ifExists}}}
}

func withID(id string, cmd *pb.Command) *pb.Command {
	cmd.RequestId = []byte(id)
	return cmd
}

// ordersTable is a valid primary-key table definition; edit sets fields.
func ordersTable(db, name string, edit func(*pb.CreateTable)) *pb.CreateTable {
	c := &pb.CreateTable{
		Database: db,
		Name:     name,
		Columns: []*pb.Column{
			{Name: "id", Type: "BIGINT"},
			{Name: "region", Type: "STRING"},
			{Name: "amount", Type: "DECIMAL(10,2)", Nullable: true},
			{Name: "note", Type: "STRING", Nullable: true},
		},
		PrimaryKey: []string{"id", "region"},
		Checks:     CreateTableChecks,
	}
	if edit != nil {
		edit(c)
	}
	return c
}

// rawDump renders every key and value of the file except the bookkeeping
// that every Apply changes (applied index, remembered requests).
func rawDump(t *testing.T, s *State) string {
	t.Helper()
	return dumpFile(t, s, false)
}

// fullDump renders every key and value of the file.
func fullDump(t *testing.T, s *State) string {
	t.Helper()
	return dumpFile(t, s, true)
}

func dumpFile(t *testing.T, s *State, all bool) string {
	t.Helper()
	var b strings.Builder
	err := s.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			if !all && (bytes.Equal(name, bucketRequests) || bytes.Equal(name, bucketRequestOrder)) {
				return nil
			}
			return bk.ForEach(func(k, v []byte) error {
				if !all && bytes.Equal(name, bucketMeta) &&
					(bytes.Equal(k, keyAppliedIndex) || bytes.Equal(k, keyRequestCount)) {
					return nil
				}
				fmt.Fprintf(&b, "%s/%x = %x\n", name, k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// readDump renders everything the public reads return.
func readDump(t *testing.T, s *State) string {
	t.Helper()
	var b strings.Builder
	line := func(m proto.Message) {
		v, err := marshal.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%T %x\n", m, v)
	}
	fmt.Fprintf(&b, "applied %d cluster %q\n", s.AppliedIndex(), s.ClusterID())
	for _, n := range s.Nodes() {
		line(n)
	}
	for _, db := range s.Databases() {
		line(db)
		tables, err := s.Tables(db.GetName())
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			tr, buckets, err := s.Table(db.GetName(), tb.GetName())
			if err != nil {
				t.Fatal(err)
			}
			line(tr)
			for _, bk := range buckets {
				line(bk)
			}
		}
	}
	return b.String()
}

// requestCount is the number of remembered request ids, checked against
// both buckets.
func requestCount(t *testing.T, s *State) int {
	t.Helper()
	var n, order int
	var stored uint64
	err := s.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketRequests).Stats().KeyN
		order = tx.Bucket(bucketRequestOrder).Stats().KeyN
		var err error
		stored, err = getU64(tx.Bucket(bucketMeta), keyRequestCount)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != order || uint64(n) != stored {
		t.Fatalf("requests %d, request_order %d, request_count %d", n, order, stored)
	}
	return n
}

// wantRefused checks a result's code and that its message names want.
func wantRefused(t *testing.T, res *pb.CommandResult, code pb.ErrorCode, want ...string) {
	t.Helper()
	if res.GetError() == "" {
		t.Fatalf("succeeded, want %v", code)
	}
	if res.GetCode() != code {
		t.Fatalf("code %v (%s), want %v", res.GetCode(), res.GetError(), code)
	}
	for _, w := range want {
		if !strings.Contains(res.GetError(), w) {
			t.Fatalf("message %q does not mention %q", res.GetError(), w)
		}
	}
}

// wantCode checks an error's code.
func wantCode(t *testing.T, err error, code pb.ErrorCode) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v (%T), want code %v", err, err, code)
	}
	if e.WireCode() != code {
		t.Fatalf("code %v (%v), want %v", e.WireCode(), e, code)
	}
}

func names[T interface{ GetName() string }](recs []T) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.GetName()
	}
	return out
}

func sameSet(a, b []uint32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func mustMarshal(t *testing.T, cmd *pb.Command) []byte {
	t.Helper()
	data, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func allocateWriterID() *pb.Command {
	return &pb.Command{Op: &pb.Command_AllocateWriterId{AllocateWriterId: &pb.AllocateWriterId{}}}
}

// adjustIsr is an AdjustIsr from b's current leader at b's epochs.
func adjustIsr(b *pb.BucketRecord, isr ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_AdjustIsr{AdjustIsr: &pb.AdjustIsr{
		TableId: b.GetTableId(), Bucket: b.GetBucket(), LeaderId: b.GetLeader(),
		LeaderEpoch: b.GetLeaderEpoch(), BucketEpoch: b.GetBucketEpoch(), Isr: isr,
	}}}
}

func fenceNodes(gone ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_FenceNodes{FenceNodes: &pb.FenceNodes{Gone: gone}}}
}

// registerIncarnation registers a tablet node with an incarnation.
func registerIncarnation(id uint32, incarnation string) *pb.Command {
	cmd := registerNode(id, "", RoleTablet)
	cmd.GetRegisterNode().Node.Incarnation = incarnation
	return cmd
}

// buckets returns every bucket record, by table id and number.
func (h *harness) buckets() []*pb.BucketRecord {
	h.t.Helper()
	img, err := h.s.Image()
	if err != nil {
		h.t.Fatal(err)
	}
	return img.GetBuckets()
}

// bucket returns one bucket record.
func (h *harness) bucket(tableID uint64, bucket int32) *pb.BucketRecord {
	h.t.Helper()
	b, err := h.s.Bucket(tableID, bucket)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// feedAt returns the update the feed recorded at index, or nil.
func (h *harness) feedAt(index uint64) *pb.MetadataUpdate {
	h.t.Helper()
	updates, ok := h.s.Changes(index - 1)
	if !ok {
		h.t.Fatalf("Changes(%d) not ok", index-1)
	}
	if len(updates) == 0 || updates[0].GetIndex() != index {
		return nil
	}
	return updates[0]
}

// bucketFixture: tablet nodes 1..nodes and table 1 ("db.t") with one bucket
// of replicas in that order, led by the first, all in the ISR.
func bucketFixture(t *testing.T, nodes int, replicas ...uint32) *harness {
	t.Helper()
	h := newHarness(t)
	h.tabletNodes(nodes)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 1, int32(len(replicas)) })))
	// Place chose the replicas; set the ones the test wants.
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: replicas, Leader: replicas[0], Isr: slices.Clone(replicas)})
	return h
}

// setBucket overwrites a bucket record behind the state machine's back, to
// set up a test. The bucket index is built again from the file when next
// needed.
func setBucket(t *testing.T, s *State, b *pb.BucketRecord) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		return putRecord(tx.Bucket(bucketBuckets), bucketKey(b.GetTableId(), b.GetBucket()), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.applyMu.Lock()
	s.index = nil
	s.applyMu.Unlock()
}

// electLeaders is an ElectLeaders of db.t; bucket < 0 means every bucket.
func electLeaders(bucket int32, unclean bool, live ...uint32) *pb.Command {
	c := &pb.ElectLeaders{Database: "db", Table: "t", Unclean: unclean, LiveNodes: live}
	if bucket >= 0 {
		c.Bucket = &bucket
	}
	return &pb.Command{Op: &pb.Command_ElectLeaders{ElectLeaders: c}}
}

// snapshotOf is a snapshot of s, to restore.
func snapshotOf(t interface{ Fatal(...any) }, s *State) *bytes.Reader {
	var buf bytes.Buffer
	if err := s.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}
