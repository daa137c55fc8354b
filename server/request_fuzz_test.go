package server

import (
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// fuzzRequestTypes lists the request type of every Meta and Tablet method,
// in descriptor order: a fuzz input's first byte picks one.
func fuzzRequestTypes(t testing.TB) []protoreflect.MessageType {
	var out []protoreflect.MessageType
	for _, file := range []protoreflect.FileDescriptor{pb.File_meta_proto, pb.File_tablet_proto} {
		for i := range file.Services().Len() {
			methods := file.Services().Get(i).Methods()
			for j := range methods.Len() {
				mt, err := protoregistry.GlobalTypes.FindMessageByName(methods.Get(j).Input().FullName())
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, mt)
			}
		}
	}
	return out
}

// FuzzRequestDecode feeds arbitrary bytes, as the request of the Meta or
// Tablet method the first byte picks, through what a node does with a
// request before it touches state: the transport's field limits, decoding,
// and the handlers' own checks (batch decoding and decompression under the
// batch limit, schema parsing, the command precheck, Hello's peer checks).
// Nothing may panic, and no input may allocate more than a bounded
// multiple of its size.
func FuzzRequestDecode(f *testing.F) {
	types := fuzzRequestTypes(f)
	limiter, err := transport.NewFieldLimiter(requestFieldLimits())
	if err != nil {
		f.Fatal(err)
	}
	codec, err := record.NewCodec(record.CodecConfig{MaxBatchBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(codec.Close)
	index := map[protoreflect.FullName]byte{}
	for i, mt := range types {
		index[mt.Descriptor().FullName()] = byte(i)
	}
	seed := func(msg proto.Message) {
		data, err := proto.Marshal(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{index[msg.ProtoReflect().Descriptor().FullName()]}, data...))
	}
	bld := record.NewBatchBuilder(record.BatchOptions{AppendOnly: true, Compression: record.CompressionZstd, Codec: codec}, 0)
	_ = bld.Append(record.AppendOnly, []byte("a row"))
	batch, _ := bld.Build()
	seed(&pb.ProduceRequest{TableId: 1, Acks: -1, Batch: batch})
	seed(&pb.LookupRequest{TableId: 1, Keys: [][]byte{{1}, {2}}})
	seed(&pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: 1}, {TableId: 2}}, MaxBytes: 1 << 20})
	seed(&pb.HelloRequest{NodeId: 2, RpcAddress: "127.0.0.1:7700", Roles: []string{RoleMeta}, Peers: []*pb.PeerInfo{{NodeId: 3, RpcAddress: "127.0.0.1:7710"}}})
	seed(&pb.CreateTableRequest{Database: "db", Name: "t", Schema: "id BIGINT NOT NULL, v STRING", PrimaryKey: []string{"id"}, Properties: map[string]string{"log.ttl": "1h"}})
	seed(&pb.CreateDatabaseRequest{Name: "db"})
	seed(&pb.ProposeRequest{Command: &pb.Command{Op: &pb.Command_DropTable{DropTable: &pb.DropTable{Database: "db", Name: "t"}}}})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		msg := types[int(data[0])%len(types)].New().Interface()
		buf := data[1:]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if limiter.Check(buf, msg) == nil && proto.Unmarshal(buf, msg) == nil {
			checkRequest(codec, msg)
		}
		runtime.ReadMemStats(&after)
		// Decoding costs a multiple of the input; a batch may inflate to
		// the codec's limit (and its decoder's window).
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256*uint64(len(buf))+16<<20 {
			t.Fatalf("a %d-byte %s allocated %d bytes", len(buf), msg.ProtoReflect().Descriptor().FullName(), alloc)
		}
	})
}

// checkRequest runs the checks a handler makes of msg before it reads or
// changes state.
func checkRequest(codec *record.Codec, msg proto.Message) {
	batch := func(data []byte) {
		b, err := record.Check(data)
		if err != nil {
			return
		}
		it, _, err := b.Records(codec, nil)
		if err != nil {
			return
		}
		for it.Next() {
		}
	}
	switch req := msg.(type) {
	case *pb.ProduceRequest:
		batch(req.Batch)
	case *pb.PutKvRequest:
		batch(req.Batch)
	case *pb.HelloRequest:
		for _, p := range req.Peers {
			usablePeer(p)
		}
	case *pb.CreateTableRequest:
		if cmd, err := meta.CreateTableCommand(req, nil); err == nil {
			metastate.Precheck(cmd)
		}
	case *pb.CreateDatabaseRequest:
		metastate.Precheck(&pb.Command{RequestId: req.RequestId, Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: req.Name}}})
	case *pb.ProposeRequest:
		metastate.Precheck(req.GetCommand())
	}
}
