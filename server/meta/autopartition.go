package meta

import (
	"context"
	"fmt"
	"time"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// autoPartitionEvery paces the controller's auto-partitioning rounds.
const autoPartitionEvery = 2 * time.Second

// maxAutoPartitionChanges bounds the partitions one round creates and
// drops in all, so a table that was behind for long catches up over a few
// rounds without holding the controller.
const maxAutoPartitionChanges = 64

// partitionPlan is what auto-partitioning does to one table now.
type partitionPlan struct {
	table  *pb.TableRecord
	create [][]string            // values of partitions to create
	drop   []*pb.PartitionRecord // partitions past retention
}

// planAutoPartitions decides what auto-partitioning does now to a table
// with auto-partition.time-unit set: create the partitions of the current
// period and the num-precreate - 1 after it that are missing, and drop
// the partitions of periods more than num-retention before the current
// one. Partitions whose values are not of the unit's format (added by
// hand) are left alone. The plan is a pure function of the table, its
// partitions and now, so any controller, before or after a change of
// leader, plans the same.
func planAutoPartitions(t *pb.TableRecord, parts []*pb.PartitionRecord, now time.Time) (partitionPlan, error) {
	plan := partitionPlan{table: t}
	props, err := metastate.TableProperties(t)
	if err != nil || props.AutoPartition == "" {
		return plan, err
	}
	unit, err := partition.ParseTimeUnit(props.AutoPartition)
	if err != nil {
		return plan, err
	}
	loc := props.AutoPartitionZone
	if loc == nil {
		loc = time.UTC
	}
	current := unit.Start(now.In(loc))
	have := make(map[string]bool, len(parts))
	for _, p := range parts {
		if len(p.GetValues()) == 1 {
			have[p.GetValues()[0]] = true
		}
	}
	for i := range props.AutoPartitionPrecreate {
		v := unit.Format(unit.Add(current, i))
		if !have[v] {
			plan.create = append(plan.create, []string{v})
		}
	}
	if props.AutoPartitionRetention > 0 {
		oldest := unit.Add(current, -props.AutoPartitionRetention) // the oldest period kept
		for _, p := range parts {
			if len(p.GetValues()) != 1 {
				continue
			}
			start, ok := unit.Parse(p.GetValues()[0], loc)
			if ok && start.Before(oldest) {
				plan.drop = append(plan.drop, p)
			}
		}
	}
	return plan, nil
}

// autoPartition runs one round of auto-partitioning over every table that
// has it: creates come with if_not_exists and drops with if_exists and the
// partition's id, so a round that repeats one a previous controller made,
// or races an operator, changes nothing twice.
func (r *Role) autoPartition(ctx context.Context, n *raftmeta.Node, live []uint32, now time.Time) error {
	var plans []partitionPlan
	err := n.State().Read(func(v *metastate.View) error {
		dbs, err := v.Databases()
		if err != nil {
			return err
		}
		for _, db := range dbs {
			tables, err := v.Tables(db.GetName())
			if err != nil {
				return err
			}
			for _, t := range tables {
				if len(t.GetPartitionKeys()) != 1 || t.GetProperties()[tableprop.AutoPartitionTimeUnit] == "" {
					continue
				}
				parts, err := v.Partitions(t.GetId())
				if err != nil {
					return err
				}
				plan, err := planAutoPartitions(t, parts, now)
				if err != nil {
					r.log.Warn("controller: auto-partitioning a table", "table", t.GetDatabase()+"."+t.GetName(), "err", err)
					continue
				}
				if len(plan.create)+len(plan.drop) > 0 {
					plans = append(plans, plan)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	changes := 0
	for _, plan := range plans {
		t := plan.table
		for _, values := range plan.create {
			if changes++; changes > maxAutoPartitionChanges {
				return nil
			}
			if err := r.proposeAuto(ctx, n, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_CreatePartition{CreatePartition: &pb.CreatePartition{
				Database: t.GetDatabase(), Table: t.GetName(), TableId: t.GetId(), Values: values, IfNotExists: true,
				Origin: pb.PartitionOrigin_PARTITION_ORIGIN_AUTO, LiveNodes: live}}}); err != nil {
				return fmt.Errorf("create partition %v of %s.%s: %w", values, t.GetDatabase(), t.GetName(), err)
			}
			r.log.Info("controller: partition created", "table", t.GetDatabase()+"."+t.GetName(), "partition", values)
		}
		for _, p := range plan.drop {
			if changes++; changes > maxAutoPartitionChanges {
				return nil
			}
			if err := r.proposeAuto(ctx, n, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_DropPartition{DropPartition: &pb.DropPartition{
				Database: t.GetDatabase(), Table: t.GetName(), TableId: t.GetId(), Values: p.GetValues(), IfExists: true,
				PartitionId: p.GetId()}}}); err != nil {
				return fmt.Errorf("drop partition %s of %s.%s: %w", p.GetName(), t.GetDatabase(), t.GetName(), err)
			}
			r.log.Info("controller: partition past retention dropped", "table", t.GetDatabase()+"."+t.GetName(), "partition", p.GetName())
		}
	}
	return nil
}

// proposeAuto proposes one auto-partitioning command; a refusal is an
// error (a table dropped or created again meanwhile: the next round sees
// the new state).
func (r *Role) proposeAuto(ctx context.Context, n *raftmeta.Node, cmd *pb.Command) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := n.Propose(cctx, cmd)
	if err != nil {
		return err
	}
	return metastate.ResultError(res)
}
