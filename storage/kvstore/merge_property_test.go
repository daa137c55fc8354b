package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/floedb/floe/storage/record"
	"pgregory.net/rapid"
)

// TestChangelogReplayEqualsState runs random upserts, partial updates and
// deletes through Merge and checks that replaying the emitted changelog from
// scratch, into a map and into a Store, gives the table state.
func TestChangelogReplayEqualsState(t *testing.T) {
	keys, err := record.NewKeyEncoder(testSchema, testSchema.PrimaryKey)
	if err != nil {
		t.Fatal(err)
	}
	baseDir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		engine := rapid.SampledFrom([]MergeEngine{LastRow(), FirstRow(), Versioned("ver")}).Draw(rt, "engine")
		opts := MergeOptions{
			NoUpdateBefore: rapid.Bool().Draw(rt, "no update before"),
			DeleteBehavior: rapid.SampledFrom([]DeleteBehavior{DeleteAllow, DeleteIgnore}).Draw(rt, "delete behavior"),
		}
		state := map[string][]byte{}
		var changelog []Change
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps {
			id := rapid.Int64Range(0, 4).Draw(rt, "id")
			var u Update
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 2:
				u = Update{Row: fullRow(rt, id, 0, "", ""), Delete: true}
			case op < 4 && engine == LastRow():
				cols := []int{colVer, colName, colNote}
				picked := rapid.SliceOfNDistinct(rapid.SampledFrom(cols), 1, 3, rapid.ID[int]).Draw(rt, "partial columns")
				vals := map[int]any{colID: id}
				for _, c := range picked {
					switch c {
					case colVer:
						vals[c] = rapid.Int64Range(0, 5).Draw(rt, "ver")
					case colName:
						vals[c] = rapid.StringMatching(`[a-c]{1,9}`).Draw(rt, "name")
					case colNote:
						if note := rapid.StringMatching(`[x-z]{0,9}`).Draw(rt, "note"); note != "" {
							vals[c] = note
						}
					}
				}
				u = Update{Row: encodeRow(rt, relaxedSchema(), vals), PartialColumns: picked}
			default:
				u = Update{Row: fullRow(rt, id,
					rapid.Int64Range(0, 5).Draw(rt, "ver"),
					rapid.StringMatching(`[a-c]{1,9}`).Draw(rt, "name"),
					rapid.StringMatching(`[x-z]{0,9}`).Draw(rt, "note"))}
			}
			key, err := keys.AppendKey(nil, u.Row)
			if err != nil {
				rt.Fatalf("AppendKey: %v", err)
			}
			old := state[string(key)]
			changes, newRow, err := Merge(testSchema, engine, old, u, opts)
			if err != nil {
				// Only a partial insert that leaves a NOT NULL column null fails.
				if old != nil || u.PartialColumns == nil || !errors.Is(err, record.ErrNullNotAllowed) {
					rt.Fatalf("step %d: unexpected Merge error: %v", step, err)
				}
				continue
			}
			if newRow == nil {
				delete(state, string(key))
			} else {
				if err := record.ValidateRow(testSchema, newRow); err != nil {
					rt.Fatalf("step %d: merged row invalid: %v", step, err)
				}
				state[string(key)] = slices.Clone(newRow)
			}
			for _, c := range changes {
				changelog = append(changelog, Change{Key: key, Row: slices.Clone(c.Row), Kind: c.Kind})
			}
		}

		replayed := replay(rt, changelog, opts.NoUpdateBefore)
		if !maps.EqualFunc(replayed, state, bytes.Equal) {
			rt.Fatalf("changelog replay differs from state:\nreplayed %v\nstate    %v", replayed, state)
		}

		run++
		db, err := OpenDB(Config{Dir: filepath.Join(baseDir, fmt.Sprint(run))})
		if err != nil {
			rt.Fatalf("OpenDB: %v", err)
		}
		defer db.Close()
		s, err := db.Open(testStoreID)
		if err != nil {
			rt.Fatalf("Open: %v", err)
		}
		// Apply in a few batches, offsets one per record.
		var next int64
		for batch := range slices.Chunk(changelog, 7) {
			next += int64(len(batch))
			if err := s.Apply(batch, next); err != nil {
				rt.Fatalf("Apply: %v", err)
			}
		}
		stored := map[string][]byte{}
		if err := s.PrefixScan(nil, func(key []byte, r Row) error {
			row := r.Data
			stored[string(key)] = slices.Clone(row)
			return nil
		}); err != nil {
			rt.Fatalf("PrefixScan: %v", err)
		}
		if !maps.EqualFunc(stored, state, bytes.Equal) {
			rt.Fatalf("store after Apply differs from state:\nstored %v\nstate  %v", stored, state)
		}
	})
}

// replay builds the table from a changelog, checking that every record is
// consistent with what the replay holds so far.
func replay(t *rapid.T, changelog []Change, noUpdateBefore bool) map[string][]byte {
	m := map[string][]byte{}
	for i, c := range changelog {
		cur, ok := m[string(c.Key)]
		switch c.Kind {
		case record.Insert:
			if ok {
				t.Fatalf("record %d: +I of a present key", i)
			}
			m[string(c.Key)] = c.Row
		case record.UpdateBefore:
			if noUpdateBefore {
				t.Fatalf("record %d: -U with NoUpdateBefore", i)
			}
			if !ok || !bytes.Equal(cur, c.Row) {
				t.Fatalf("record %d: -U does not match the current row", i)
			}
			if i+1 >= len(changelog) || changelog[i+1].Kind != record.UpdateAfter || !bytes.Equal(changelog[i+1].Key, c.Key) {
				t.Fatalf("record %d: -U not followed by +U of its key", i)
			}
		case record.UpdateAfter:
			if !ok {
				t.Fatalf("record %d: +U of an absent key", i)
			}
			m[string(c.Key)] = c.Row
		case record.Delete:
			if !ok || !bytes.Equal(cur, c.Row) {
				t.Fatalf("record %d: -D does not match the current row", i)
			}
			delete(m, string(c.Key))
		default:
			t.Fatalf("record %d: unexpected %s", i, c.Kind)
		}
	}
	return m
}
