package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/transport/tlsconf"
)

// serveHTTP serves /healthz (the process is up), /readyz (200 when the node
// is ready, see readiness; 503 with the reason otherwise), /metrics (the
// node's Prometheus series, metrics.go) and Go's /debug/pprof/ until ctx
// ends.
func (s *Server) serveHTTP(ctx context.Context, lis net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ready, why := s.ready(r.Context())
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(map[string]any{"ready": ready, "reason": why, "node": s.cfg.NodeID, "cluster_id": s.ClusterID()})
	})
	gate := s.httpGate()
	mux.Handle("GET /metrics", gate.require(opDescribe, s.metrics.handler(s.log)))
	// Go's profiler, for operators chasing CPU, memory or lock contention.
	mux.Handle("/debug/pprof/", gate.require(opClusterAdmin, http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", gate.require(opClusterAdmin, http.HandlerFunc(redactedCmdline)))
	mux.Handle("/debug/pprof/profile", gate.require(opClusterAdmin, http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", gate.require(opClusterAdmin, http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", gate.require(opClusterAdmin, http.HandlerFunc(pprof.Trace)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	if s.sec.tls != nil {
		cfg, err := s.sec.tls.ServerConfig(tlsconf.ClientAuthRequest)
		if err != nil {
			return pkgerr.Errorf("server", "HTTP: %w", err)
		}
		lis = tls.NewListener(lis, cfg)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return pkgerr.Errorf("server", "HTTP on %s: %w", lis.Addr(), err)
	}
	return nil
}

// votersTimeout bounds reading the metadata voters for readiness.
const votersTimeout = time.Second

// ready reports whether the node can serve, and why not.
func (s *Server) ready(ctx context.Context) (bool, string) {
	in := readinessInput{formed: isClosed(s.formed), registeredAt: s.registeredAt.Load(),
		meta: s.cfg.HasRole(RoleMeta), tablet: s.tablet != nil}
	if why := s.registerErr.Load(); why != nil {
		in.registerErr = *why
	}
	if n := s.meta.Node(); n != nil {
		in.leader, _ = n.Leader()
		in.metaApplied = n.Status().AppliedIndex
		vctx, cancel := context.WithTimeout(ctx, votersTimeout)
		missing, voters, err := meta.UnregisteredVoters(vctx, n)
		cancel()
		in.unregisteredVoters, in.voters = missing, voters
		if err != nil {
			in.votersErr = err.Error()
		}
	}
	if s.tablet != nil {
		f := s.tablet.FollowerState()
		in.tabletApplied, in.watching, in.watchErr = f.Applied, f.Watching, f.LastErr
	}
	return readiness(in)
}

// HTTPAddr is the address /healthz, /readyz and /metrics are served on, ""
// without Config.HTTP.
func (s *Server) HTTPAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
