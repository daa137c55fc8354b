package metastate

import (
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// keyClusterSettings holds the ClusterSettings in the meta bucket.
var keyClusterSettings = []byte("cluster_settings")

// ClusterSettings returns the cluster's settings; the defaults when none
// were ever set.
func (v *View) ClusterSettings() (*pb.ClusterSettings, error) { return readClusterSettings(v.tx) }

func readClusterSettings(tx *bolt.Tx) (*pb.ClusterSettings, error) {
	s := &pb.ClusterSettings{}
	if v := tx.Bucket(bucketMeta).Get(keyClusterSettings); v != nil {
		if err := proto.Unmarshal(v, s); err != nil {
			return nil, corruptRecord(keyClusterSettings, err)
		}
	}
	return s, nil
}

// setClusterSettings changes the settings the command names.
func (a *applier) setClusterSettings(c *pb.SetClusterSettings) (*pb.CommandResult, error) {
	s, err := readClusterSettings(a.tx)
	if err != nil {
		return nil, err
	}
	before := proto.CloneOf(s)
	if c.AutoElectLeaders != nil {
		s.AutoElectLeaders = c.GetAutoElectLeaders()
	}
	res := &pb.CommandResult{Value: &pb.CommandResult_Settings{Settings: s}}
	if proto.Equal(before, s) {
		res.Unchanged = true
		return res, nil
	}
	v, err := marshal.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := a.tx.Bucket(bucketMeta).Put(keyClusterSettings, v); err != nil {
		return nil, err
	}
	return res, nil
}
