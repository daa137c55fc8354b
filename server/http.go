package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveHTTP serves /healthz (the process is up), /readyz (the node is in a
// cluster and, for meta nodes, a metadata leader is known) and Go's
// /debug/pprof/ until ctx ends.
func (s *Server) serveHTTP(ctx context.Context, lis net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, why := s.ready()
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(map[string]any{"ready": ready, "reason": why, "node": s.cfg.NodeID, "cluster_id": s.ClusterID()})
	})
	// Go's profiler, for operators chasing CPU, memory or lock contention.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ready reports whether the node can serve, and why not.
func (s *Server) ready() (bool, string) {
	select {
	case <-s.formed:
	default:
		return false, "not in a cluster yet"
	}
	select {
	case <-s.readyCh:
	default:
		return false, "not registered yet"
	}
	if n := s.node.Load(); n != nil {
		if id, _ := n.Leader(); id == 0 {
			return false, "no metadata leader"
		}
	}
	return true, ""
}
