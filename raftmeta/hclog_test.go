package raftmeta

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestHCLogRendersFormattingValues: raft logs its configuration as
// hclog.Fmt("%+v", servers); the adapter must print the formatted text,
// not the Format slice (servers="[%+v [...]]"), and the same for hclog's
// other formatting values.
func TestHCLogRendersFormattingValues(t *testing.T) {
	var buf bytes.Buffer
	log := newHCLog(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	servers := []raft.Server{{Suffrage: raft.Voter, ID: "1", Address: "127.0.0.1:7700"}}
	log.Info("updating configuration", "servers", hclog.Fmt("%+v", servers),
		"hex", hclog.Hex(255), "octal", hclog.Octal(8), "binary", hclog.Binary(5), "quote", hclog.Quote("a\nb"))
	out := buf.String()
	for _, want := range []string{
		`servers="[{Suffrage:Voter ID:1 Address:127.0.0.1:7700}]"`,
		"hex=0xff", "octal=010", "binary=0b101", `quote="\"a\\nb\""`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log line %q lacks %s", out, want)
		}
	}
	if strings.Contains(out, "%+v") {
		t.Errorf("log line %q holds a format verb", out)
	}
}
