package replication

import "fmt"

// simMsgKind is what a simulated message carries.
type simMsgKind int8

const (
	// msgFetch: a follower's fetch, to its leader.
	msgFetch simMsgKind = iota
	// msgFetchAnswer: the leader's answer, to the follower's run that asked.
	msgFetchAnswer
	// msgAdjust: an AdjustIsr request, to the controller.
	msgAdjust
	// msgAdjustAnswer: the controller's answer, to the leader's run that asked.
	msgAdjustAnswer
	// msgMeta: a committed image of the bucket on a node's metadata stream.
	msgMeta
)

// simMsg is a message in flight. The network delivers the messages in any
// order, drops and duplicates them; answers and metadata are addressed to
// one run (process lifetime) of a node and die with it, as a connection
// does, while requests a node sent may still arrive after it crashed.
type simMsg struct {
	kind    simMsgKind
	from    uint32 // 0: the controller
	to      uint32 // 0: the controller
	fromRun int
	toRun   int
	// seq numbers a follower's fetches: an answer matches its request.
	seq uint64

	fetch    FollowerFetch
	answer   FetchAnswer
	entries  []simEntry
	fetchErr error

	adjust simAdjust
	result simAdjustResult

	img simImage
}

func (m simMsg) String() string {
	switch m.kind {
	case msgFetch:
		f := m.fetch
		return fmt.Sprintf("fetch %d→%d #%d epoch %d offset %d last epoch %d", m.from, m.to, m.seq, f.LeaderEpoch, f.Offset, f.LastFetchedEpoch)
	case msgFetchAnswer:
		a := m.answer
		if m.fetchErr != nil {
			return fmt.Sprintf("fetch answer %d→%d #%d: %v", m.from, m.to, m.seq, m.fetchErr)
		}
		if a.Diverging {
			return fmt.Sprintf("fetch answer %d→%d #%d epoch %d: diverging at epoch %d end %d", m.from, m.to, m.seq, a.LeaderEpoch, a.DivergingEpoch, a.DivergingEnd)
		}
		return fmt.Sprintf("fetch answer %d→%d #%d epoch %d [%d,%d) of %d hw %d", m.from, m.to, m.seq, a.LeaderEpoch, a.From, a.From+int64(len(m.entries)), a.To, a.HW)
	case msgAdjust:
		a := m.adjust
		return fmt.Sprintf("adjust isr %d→controller #%d %v at epochs %d/%d", m.from, a.proposalID, a.isr, a.leaderEpoch, a.bucketEpoch)
	case msgAdjustAnswer:
		return fmt.Sprintf("adjust answer →%d #%d %s %s %+v", m.to, m.adjust.proposalID, outcomeName(m.result.outcome), m.result.why, m.result.a)
	}
	return fmt.Sprintf("metadata →%d index %d %+v", m.to, m.img.index, m.img.a)
}

func outcomeName(o Outcome) string {
	switch o {
	case Committed:
		return "committed"
	case Refused:
		return "refused"
	case Fenced:
		return "fenced"
	}
	return "unknown"
}
