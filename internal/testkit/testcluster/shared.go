package testcluster

import (
	"context"
	"errors"
	"sync"
)

// ErrSharedClosed is returned by Shared.Cluster once the shared cluster was
// closed.
var ErrSharedClosed = errors.New("testcluster: shared cluster closed")

// Shared is one cluster that the tests of a package share, since starting one
// takes seconds: the first call to Cluster starts it, and the package's
// TestMain closes it after the tests ran:
//
//	var shared = testcluster.Shared{Options: testcluster.Options{Nodes: 3}}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		if err := shared.Close(); err != nil {
//			fmt.Fprintln(os.Stderr, "closing the test cluster:", err)
//		}
//		os.Exit(code)
//	}
//
// Each test makes its own tables (in a database named by NameFor), and a test
// that stops a node starts it again before it ends. Its methods are safe for
// concurrent use.
type Shared struct {
	// Options shape the cluster.
	Options Options
	// Setup, if set, runs once on the started cluster before any test sees
	// it: fixtures every test of the package uses. Its error is the start's.
	Setup func(context.Context, *Cluster) error

	mu      sync.Mutex
	started bool
	closed  bool
	c       *Cluster
	err     error // the start's, returned to every caller
}

// Cluster returns the shared cluster, starting it (and running Setup) on the
// first call; ctx bounds that start only. A failed start is not retried: every
// later call returns its error, so one broken start fails each test once
// instead of costing each a start.
func (s *Shared) Cluster(ctx context.Context) (*Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSharedClosed
	}
	if !s.started {
		s.started = true
		s.c, s.err = s.start(ctx)
	}
	return s.c, s.err
}

func (s *Shared) start(ctx context.Context) (*Cluster, error) {
	c, err := Start(ctx, s.Options)
	if err != nil {
		return nil, err
	}
	if s.Setup != nil {
		if err := s.Setup(ctx, c); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// Close closes the cluster if it was started; later calls to Cluster return
// ErrSharedClosed. Closing twice does nothing.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
