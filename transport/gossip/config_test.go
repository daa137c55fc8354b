package gossip

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{NodeID: 1, BindAddress: "127.0.0.1:7946", RPCAddress: "127.0.0.1:7400", Incarnation: "i"}
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		errHas string // "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"all interfaces", func(c *Config) { c.BindAddress = ":7946" }, ""},
		{"ipv6", func(c *Config) { c.BindAddress = "[::1]:7946" }, ""},
		{"advertise ip only", func(c *Config) { c.AdvertiseAddress = "10.0.0.1" }, ""},
		{"advertise ip:port", func(c *Config) { c.AdvertiseAddress = "10.0.0.1:8000" }, ""},
		{"local profile", func(c *Config) { c.Profile = ProfileLocal }, ""},
		{"node id 0", func(c *Config) { c.NodeID = 0 }, "NodeID"},
		{"no bind", func(c *Config) { c.BindAddress = "" }, "BindAddress"},
		{"bind hostname", func(c *Config) { c.BindAddress = "localhost:7946" }, "BindAddress"},
		{"bind no port", func(c *Config) { c.BindAddress = "127.0.0.1" }, "BindAddress"},
		{"bind bad port", func(c *Config) { c.BindAddress = "127.0.0.1:70000" }, "BindAddress"},
		{"advertise hostname", func(c *Config) { c.AdvertiseAddress = "node1:7946" }, "AdvertiseAddress"},
		{"advertise no ip", func(c *Config) { c.AdvertiseAddress = ":7946" }, "AdvertiseAddress"},
		{"no rpc", func(c *Config) { c.RPCAddress = "" }, "RPCAddress"},
		{"no incarnation", func(c *Config) { c.Incarnation = "" }, "Incarnation"},
		{"empty role", func(c *Config) { c.Roles = []string{"meta", ""} }, "Roles[1]"},
		{"empty join", func(c *Config) { c.Join = []string{""} }, "Join[0]"},
		{"profile", func(c *Config) { c.Profile = "wan" }, "Profile"},
		{"forget", func(c *Config) { c.ForgetAfter = -time.Second }, "ForgetAfter"},
		{"meta size", func(c *Config) { c.Roles = []string{strings.Repeat("r", 500)} }, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.modify(&c)
			err := c.Validate()
			switch {
			case tc.errHas == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Errorf("Validate: %v, want an error about %s", err, tc.errHas)
			}
		})
	}
}

func TestMemberlistConfig(t *testing.T) {
	c := Config{NodeID: 42, BindAddress: ":7000", AdvertiseAddress: "10.1.2.3", RPCAddress: "r", Incarnation: "i", Profile: ProfileLocal}
	tm, err := profileTimings(c.Profile)
	if err != nil {
		t.Fatal(err)
	}
	mc := c.memberlistConfig(tm)
	if mc.Name != "42" || mc.BindAddr != "0.0.0.0" || mc.BindPort != 7000 || mc.AdvertiseAddr != "10.1.2.3" || mc.AdvertisePort != 7000 {
		t.Errorf("got name %q bind %s:%d advertise %s:%d", mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertiseAddr, mc.AdvertisePort)
	}
	if mc.ProbeInterval != 200*time.Millisecond || mc.SuspicionMult != 3 {
		t.Errorf("local profile not applied: probe %v suspicion %d", mc.ProbeInterval, mc.SuspicionMult)
	}
	lan, _ := profileTimings("")
	if mc := c.memberlistConfig(lan); mc.EnableCompression {
		t.Error("gossip messages are compressed: LZW's table is allocated for every message")
	}
	if mc := c.memberlistConfig(lan); mc.ProbeInterval != time.Second || mc.SuspicionMult != 4 {
		t.Errorf("lan profile: probe %v suspicion %d", mc.ProbeInterval, mc.SuspicionMult)
	}
}

func TestParseNodeName(t *testing.T) {
	for name, want := range map[string]uint32{"1": 1, "4294967295": 4294967295, "0": 0, "01": 0, "-1": 0, "x": 0, "4294967296": 0, "": 0} {
		got, err := parseNodeName(name)
		if got != want || (want == 0) != (err != nil) {
			t.Errorf("parseNodeName(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
}
