package kvreplica

import (
	"log/slog"
	"sync"

	"github.com/floedb/floe/storage/kvstore"
)

// dropper deletes the stores of removed replicas in the background, many
// in one kvstore.DB.Drop: a drop pauses the database's writes, and a
// dropped table removes all its buckets at once. Opening a store whose
// drop is pending waits for it.
type dropper struct {
	db  *kvstore.DB
	log *slog.Logger

	mu sync.Mutex
	// pending holds the stores queued or being dropped, each with a
	// channel closed once its rows are gone.
	pending map[kvstore.StoreID]chan struct{}
	kick    chan struct{} // capacity 1
	done    chan struct{} // closed by close
}

func (d *dropper) init(db *kvstore.DB, log *slog.Logger) {
	d.db, d.log = db, log
	d.pending = map[kvstore.StoreID]chan struct{}{}
	d.kick = make(chan struct{}, 1)
	d.done = make(chan struct{})
}

// drop queues the store of id, which is closed, for deletion.
func (d *dropper) drop(id kvstore.StoreID) {
	d.mu.Lock()
	if d.pending[id] == nil {
		d.pending[id] = make(chan struct{})
	}
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// wait returns once no drop of id is pending.
func (d *dropper) wait(id kvstore.StoreID) {
	d.mu.Lock()
	ch := d.pending[id]
	d.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// run drops what is queued until close, then what is left.
func (d *dropper) run() {
	for {
		select {
		case <-d.kick:
			d.dropPending()
		case <-d.done:
			d.dropPending()
			return
		}
	}
}

// dropPending drops the stores pending now. They stay pending until
// their drop returns, so an Open of one waits for it rather than racing it.
func (d *dropper) dropPending() {
	d.mu.Lock()
	ids := make([]kvstore.StoreID, 0, len(d.pending))
	for id := range d.pending {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := d.db.Drop(ids...); err != nil {
		// The rows stay: a space leak, not a wrong answer, since a store
		// opened again with an applied offset past its log is rebuilt.
		d.log.Error("drop KV stores of removed replicas", "stores", len(ids), "err", err)
	} else {
		d.log.Info("dropped KV stores of removed replicas", "stores", len(ids))
	}
	d.mu.Lock()
	for _, id := range ids {
		close(d.pending[id])
		delete(d.pending, id)
	}
	d.mu.Unlock()
}

// close makes run drop what is pending and return.
func (d *dropper) close() { close(d.done) }
