package gossip

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/floedb/floe/internal/pkgerr"
)

// Profiles name a set of memberlist timings; see the package doc for the
// failure-detection times of each.
const (
	// ProfileLAN is memberlist.DefaultLANConfig: the default.
	ProfileLAN = "lan"
	// ProfileLocal is memberlist.DefaultLocalConfig made faster still, for
	// nodes on one machine (tests, floe dev). Do not use it across a
	// network: a scheduling hiccup of a second can get a node declared dead.
	ProfileLocal = "local"
)

// DefaultForgetAfter is how long a dead or left member stays in Members
// when Config.ForgetAfter is zero.
const DefaultForgetAfter = time.Hour

// Config configures a Gossip.
type Config struct {
	// NodeID is this node's id (> 0); its memberlist name is the decimal
	// string.
	NodeID uint32
	// BindAddress is the ip:port to listen on, UDP and TCP on the same
	// port. An empty ip means all interfaces; port 0 picks a free port
	// (see Gossip.Address). Required.
	BindAddress string
	// AdvertiseAddress is the ip:port (or ip, keeping the bound port) that
	// other nodes reach this one at. Empty: the bound ip, or a private ip
	// of this machine when bound to all interfaces.
	AdvertiseAddress string
	// RPCAddress is this node's DRPC address, published in its meta.
	// Required.
	RPCAddress string
	// Roles are this node's roles, published in its meta.
	Roles []string
	// Incarnation identifies this node's data folder, published in its
	// meta. Required.
	Incarnation string
	// ClusterID, when not empty, is published in the meta and every peer
	// must carry the same: nodes of another cluster are refused (their
	// alive messages are ignored and joins with them fail).
	ClusterID string
	// Join lists gossip addresses (host:port) of nodes to join. New starts
	// joining them in the background, retrying until one answers or the
	// Gossip is closed; it does not wait.
	Join []string
	// Profile picks timings: ProfileLAN (the default when empty) or
	// ProfileLocal.
	Profile string
	// ForgetAfter is how long a dead or left member is still listed by
	// Members; zero means DefaultForgetAfter. Dead members are also
	// retried (to heal partitions) only until then.
	ForgetAfter time.Duration
	// KeyFile, when set, encrypts gossip with the keys it holds (keys.go),
	// read again when it changes. Empty: gossip is not encrypted.
	KeyFile string
	// Logger receives this package's and memberlist's messages; nil
	// discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == 0:
		return pkgerr.New("gossip", "config: NodeID must be > 0")
	case c.BindAddress == "":
		return pkgerr.New("gossip", "config: BindAddress is required")
	case c.RPCAddress == "":
		return pkgerr.New("gossip", "config: RPCAddress is required")
	case c.Incarnation == "":
		return pkgerr.New("gossip", "config: Incarnation is required")
	case c.ForgetAfter < 0:
		return pkgerr.New("gossip", "config: negative ForgetAfter")
	}
	if _, err := profileTimings(c.Profile); err != nil {
		return err
	}
	if _, _, err := splitIPPort(c.BindAddress, false); err != nil {
		return pkgerr.Errorf("gossip", "config: BindAddress: %w", err)
	}
	if c.AdvertiseAddress != "" {
		if _, _, err := splitIPPort(c.AdvertiseAddress, true); err != nil {
			return pkgerr.Errorf("gossip", "config: AdvertiseAddress: %w", err)
		}
	}
	for i, r := range c.Roles {
		if r == "" {
			return pkgerr.Errorf("gossip", "config: Roles[%d] is empty", i)
		}
	}
	for i, a := range c.Join {
		if a == "" {
			return pkgerr.Errorf("gossip", "config: Join[%d] is empty", i)
		}
	}
	if _, err := c.meta().encode(); err != nil {
		return pkgerr.Errorf("gossip", "config: %w", err)
	}
	return nil
}

func (c *Config) meta() nodeMeta {
	return nodeMeta{ClusterID: c.ClusterID, RPCAddress: c.RPCAddress, Incarnation: c.Incarnation, Roles: c.Roles}
}

// splitIPPort parses "ip:port". With portOptional, a bare ip is accepted
// and its port is -1. The ip may be empty only in a "host:port" form.
func splitIPPort(addr string, portOptional bool) (ip string, port int, err error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		if !portOptional || net.ParseIP(addr) == nil {
			return "", 0, fmt.Errorf("%q is not ip:port", addr)
		}
		return addr, -1, nil
	}
	if host != "" && net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("%q: %q is not an ip address", addr, host)
	}
	if host == "" && portOptional {
		return "", 0, fmt.Errorf("%q has no ip address", addr)
	}
	p, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%q: bad port", addr)
	}
	return host, int(p), nil
}

// timings are the memberlist settings of a profile and this package's
// own intervals.
type timings struct {
	// base returns the memberlist config to start from.
	base func() *memberlist.Config
	// tune adjusts it (nil: keep).
	tune func(*memberlist.Config)
	// joinBackoffMin and joinBackoffMax bound the wait between join
	// attempts.
	joinBackoffMin, joinBackoffMax time.Duration
	// reconnectInterval is how often a dead member is asked to rejoin.
	reconnectInterval time.Duration
}

func profileTimings(profile string) (timings, error) {
	switch profile {
	case "", ProfileLAN:
		return timings{
			base:              memberlist.DefaultLANConfig,
			joinBackoffMin:    200 * time.Millisecond,
			joinBackoffMax:    10 * time.Second,
			reconnectInterval: 30 * time.Second,
		}, nil
	case ProfileLocal:
		return timings{
			base: memberlist.DefaultLocalConfig,
			tune: func(mc *memberlist.Config) {
				mc.ProbeInterval = 200 * time.Millisecond
				mc.ProbeTimeout = 100 * time.Millisecond
				mc.SuspicionMult = 3
				mc.SuspicionMaxTimeoutMult = 3
				mc.GossipInterval = 50 * time.Millisecond
				mc.PushPullInterval = 5 * time.Second
				mc.GossipToTheDeadTime = 5 * time.Second
				mc.TCPTimeout = time.Second
			},
			joinBackoffMin:    20 * time.Millisecond,
			joinBackoffMax:    500 * time.Millisecond,
			reconnectInterval: 500 * time.Millisecond,
		}, nil
	default:
		return timings{}, pkgerr.Errorf("gossip", "config: unknown Profile %q (want %q or %q)", profile, ProfileLAN, ProfileLocal)
	}
}

// memberlistConfig builds memberlist's config; c must be valid.
func (c *Config) memberlistConfig(t timings) *memberlist.Config {
	mc := t.base()
	if t.tune != nil {
		t.tune(mc)
	}
	// Floe's gossip messages are a few hundred bytes: LZW buys nothing
	// on them, and its writer's 20 KB table, made for every message, was
	// most of an idle node's allocations. A node still reads compressed
	// messages from one that compresses.
	mc.EnableCompression = false
	mc.Name = nodeName(c.NodeID)
	ip, port, _ := splitIPPort(c.BindAddress, false)
	if ip == "" {
		ip = "0.0.0.0"
	}
	mc.BindAddr, mc.BindPort = ip, port
	mc.AdvertiseAddr, mc.AdvertisePort = "", port
	if c.AdvertiseAddress != "" {
		aip, aport, _ := splitIPPort(c.AdvertiseAddress, true)
		mc.AdvertiseAddr = aip
		if aport >= 0 {
			mc.AdvertisePort = aport
		}
	}
	return mc
}

func nodeName(id uint32) string { return strconv.FormatUint(uint64(id), 10) }

// parseNodeName returns the node id a memberlist name stands for.
func parseNodeName(name string) (uint32, error) {
	id, err := strconv.ParseUint(name, 10, 32)
	if err != nil || id == 0 || name != nodeName(uint32(id)) {
		return 0, pkgerr.Errorf("gossip", "node name %q is not a node id", name)
	}
	return uint32(id), nil
}
