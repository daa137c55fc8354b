package client

import (
	"testing"

	"github.com/floedb/floe/transport/pb"
)

func TestBucketStatus(t *testing.T) {
	tests := []struct {
		b    *pb.BucketRecord
		want string
	}{
		{&pb.BucketRecord{Leader: 2, Isr: []uint32{2, 3}}, BucketOnline},
		{&pb.BucketRecord{Leader: 0, Isr: []uint32{2}}, BucketOffline},
		{&pb.BucketRecord{Leader: 0}, BucketNoInSyncReplica},
	}
	for _, tc := range tests {
		info := tableFromPB(&pb.TableRecord{Name: "t"}, []*pb.BucketRecord{tc.b})
		if got := info.Placement[0].Status; got != tc.want {
			t.Errorf("%v: status %q, want %q", tc.b, got, tc.want)
		}
	}
}
