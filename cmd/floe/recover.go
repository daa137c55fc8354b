package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/server"
)

// recoverSpec is `floe recover`: it rewrites a stopped meta node's Raft configuration to the
// given voters: the way back for a cluster whose metadata lost its quorum
// for good. docs/operations.md's "Recovering a cluster that lost its metadata quorum"
// says when it is safe.
func recoverSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "recover --data-dir DIR --id ID --voters ID=ADDRESS[,ID=ADDRESS...]",
		summary: "make the surviving voters the whole metadata group of a stopped node (after a lost quorum)",
		define: func(fs *flag.FlagSet) runFunc {
			dataDir := fs.String("data-dir", "", "data folder of the stopped node")
			id := fs.Uint("id", 0, "the node's id")
			list := fs.String("voters", "", "the surviving voters, this node included, as ID=ADDRESS (their RPC address), comma-separated")
			var output string
			outputVar(fs, &output, "")
			return func(_ context.Context, pos []string) error {
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if *dataDir == "" || *id == 0 || *id > 1<<32-1 || *list == "" {
					return fmt.Errorf("%w: give --data-dir, --id and --voters", errUsage)
				}
				voters, err := parseVoters(*list)
				if err != nil {
					return fmt.Errorf("%w: --voters: %v", errUsage, err)
				}
				// Checked here too, so that the message says it without
				// the server package's name (which its other errors keep
				// until server's errors are typed with pkgerr).
				if st, err := os.Stat(*dataDir); err != nil || !st.IsDir() {
					return fmt.Errorf("no data folder at %s", *dataDir)
				}
				before, err := server.RecoverMeta(*dataDir, uint32(*id), voters)
				if err != nil {
					return err
				}
				if output == "json" {
					type voter struct {
						ID      uint32 `json:"id"`
						Address string `json:"address"`
						Voter   bool   `json:"voter"`
					}
					list := func(servers []raftmeta.Server) []voter {
						out := []voter{}
						for _, v := range servers {
							out = append(out, voter{v.ID, v.Address, v.Voter})
						}
						return out
					}
					return printJSON(env, map[string]any{"node": *id, "before": list(before), "after": list(voters)})
				}
				fmt.Fprintf(env.stdout, "recovered node %d: the metadata voters were %s; they are now %s.\n"+
					"Start the node as before; the nodes left out must never run again with their old data folder.\n",
					*id, describeVoters(before), describeVoters(voters))
				return nil
			}
		}}
}

// parseVoters reads "ID=ADDRESS,ID=ADDRESS".
func parseVoters(list string) ([]raftmeta.Server, error) {
	var out []raftmeta.Server
	seen := map[uint32]bool{}
	for _, item := range splitList(list) {
		idText, addr, ok := strings.Cut(item, "=")
		id, err := strconv.ParseUint(idText, 10, 32)
		if !ok || err != nil || id == 0 || addr == "" {
			return nil, fmt.Errorf("%q is not ID=ADDRESS", item)
		}
		if seen[uint32(id)] {
			return nil, fmt.Errorf("node %d appears twice", id)
		}
		seen[uint32(id)] = true
		out = append(out, raftmeta.Server{ID: uint32(id), Address: addr, Voter: true})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no voters")
	}
	return out, nil
}

// describeVoters reads "1 at ADDR, 2 at ADDR (non-voter)".
func describeVoters(servers []raftmeta.Server) string {
	var parts []string
	for _, s := range servers {
		p := fmt.Sprintf("%d at %s", s.ID, s.Address)
		if !s.Voter {
			p += " (non-voter)"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
