package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// helloTimeout bounds one Hello to a peer, and the plain dial that
// diagnoses a failed one.
const helloTimeout = time.Second

// joinTrouble is why a --join address did not answer as a Floe node of
// this cluster.
type joinTrouble int

const (
	joinOK joinTrouble = iota
	// joinRefused: nothing listens there (wrong port, node not started).
	joinRefused
	// joinTimeout: no answer in time (firewall, paused or overloaded node).
	joinTimeout
	// joinUnreachable: the dial failed otherwise (no route, bad host name).
	joinUnreachable
	// joinNotFloe: it accepts connections but does not speak Floe's RPC
	// (another service on that port, or a TLS or HTTP endpoint).
	joinNotFloe
	// joinOtherCluster: a Floe node of another cluster.
	joinOtherCluster
)

func (t joinTrouble) String() string {
	switch t {
	case joinOK:
		return "ok"
	case joinRefused:
		return "connection refused"
	case joinTimeout:
		return "timeout"
	case joinUnreachable:
		return "unreachable"
	case joinNotFloe:
		return "not a Floe node"
	case joinOtherCluster:
		return "different cluster id"
	}
	return fmt.Sprintf("joinTrouble(%d)", int(t))
}

// helloOutcome is what one greeting of a peer showed.
type helloOutcome struct {
	// clusterID is this node's cluster, "" while it has none.
	clusterID string
	resp      *pb.HelloResponse
	helloErr  error
	// dialErr is the result of a plain TCP dial made after a failed Hello
	// (nil: the address accepts connections).
	dialErr error
}

// diagnoseHello says why a peer did not answer as a Floe node of this
// cluster, and in words an operator can act on.
func diagnoseHello(o helloOutcome) (joinTrouble, string) {
	if o.helloErr == nil {
		if o.clusterID != "" && o.resp.GetClusterId() != "" && o.resp.GetClusterId() != o.clusterID {
			return joinOtherCluster, fmt.Sprintf("node %d belongs to cluster %s, this node to %s",
				o.resp.GetNodeId(), o.resp.GetClusterId(), o.clusterID)
		}
		return joinOK, ""
	}
	if errors.Is(o.helloErr, transport.ErrClusterMismatch) {
		return joinOtherCluster, fmt.Sprintf("a node of another cluster (this node is in %s): %v", o.clusterID, o.helloErr)
	}
	var netErr net.Error
	switch {
	case errors.Is(o.dialErr, syscall.ECONNREFUSED):
		return joinRefused, "connection refused: nothing listens there (node not started, or wrong port)"
	case errors.Is(o.dialErr, context.DeadlineExceeded), errors.As(o.dialErr, &netErr) && netErr.Timeout():
		return joinTimeout, fmt.Sprintf("no connection within %v (host down or a firewall dropping packets)", helloTimeout)
	case o.dialErr != nil:
		return joinUnreachable, o.dialErr.Error()
	case errors.Is(o.helloErr, context.DeadlineExceeded), errors.Is(o.helloErr, transport.ErrTimeout):
		return joinTimeout, fmt.Sprintf("accepts connections but did not answer within %v (paused or overloaded node?)", helloTimeout)
	}
	return joinNotFloe, fmt.Sprintf("accepts connections but does not answer as a Floe node (another service on that port?): %v", o.helloErr)
}

// joinReporter paces the warnings about --join addresses: a warning when an
// address's trouble starts or changes, then again at growing intervals
// while it lasts, so a node that cannot join says why without flooding
// its log.
type joinReporter struct {
	addrs map[string]*addrReport
}

type addrReport struct {
	trouble joinTrouble
	next    time.Time
	pace    backoff.Backoff
}

// joinReportMin and joinReportMax bound the interval between repeated
// warnings about one address.
const (
	joinReportMin = 2 * time.Second
	joinReportMax = time.Minute
)

// report records an address's trouble at now and says whether to log it;
// recovered is true when an address that had trouble answers again.
func (r *joinReporter) report(addr string, t joinTrouble, now time.Time) (log, recovered bool) {
	if r.addrs == nil {
		r.addrs = map[string]*addrReport{}
	}
	a, seen := r.addrs[addr]
	if t == joinOK {
		delete(r.addrs, addr)
		return false, seen
	}
	if !seen || a.trouble != t {
		a = &addrReport{trouble: t, pace: backoff.Backoff{Min: joinReportMin, Max: joinReportMax}}
		r.addrs[addr] = a
	} else if now.Before(a.next) {
		return false, false
	}
	a.next = now.Add(a.pace.Next())
	return true, false
}

// diagnoseJoin finds out why addr failed a Hello and logs it when the
// reporter says so.
func (s *Server) diagnoseJoin(ctx context.Context, addr string, resp *pb.HelloResponse, helloErr error) {
	o := helloOutcome{clusterID: s.ClusterID(), resp: resp, helloErr: helloErr}
	if helloErr != nil && !errors.Is(helloErr, transport.ErrClusterMismatch) {
		o.dialErr = transport.ProbeDial(ctx, addr, helloTimeout)
	}
	if ctx.Err() != nil {
		return
	}
	trouble, why := diagnoseHello(o)
	s.joinMu.Lock()
	log, recovered := s.joinReports.report(addr, trouble, time.Now())
	s.joinMu.Unlock()
	switch {
	case log:
		s.log.Warn("cannot reach a peer to join through", "peer", addr, "trouble", trouble.String(), "why", why)
	case recovered:
		s.log.Info("peer answers again", "peer", addr)
	}
}
