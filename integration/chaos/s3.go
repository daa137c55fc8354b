package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// s3Server is a versitygw in the test's namespace that the nodes tier to.
type s3Server struct {
	cmd      *exec.Cmd
	endpoint string
	port     int
	exited   chan struct{}
	// secretFile holds the secret key the nodes read (never in argv).
	secretFile string
}

const (
	s3AccessKey = "floe-chaos"
	s3SecretKey = "floe-chaos-secret"
)

// ErrNoS3Server: a scenario that tiers to S3 needs versitygw on PATH;
// tests skip it, naming the reason, when it is missing.
var ErrNoS3Server = errors.New("chaos: S3 needs versitygw on PATH")

// startS3 starts versitygw (from PATH) over dir, listening on host.
func startS3(ctx context.Context, dir, host string) (*s3Server, error) {
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		return nil, fmt.Errorf("%w (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0): %w", ErrNoS3Server, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port := 20000 + rand.IntN(20000)
	s := &s3Server{port: port, endpoint: fmt.Sprintf("%s:%d", host, port), exited: make(chan struct{}),
		secretFile: filepath.Join(dir, "..", "s3-secret-key")}
	if err := os.WriteFile(s.secretFile, []byte(s3SecretKey+"\n"), 0o600); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "--port", s.endpoint, "--quiet", "posix", dir)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s3AccessKey, "ROOT_SECRET_KEY="+s3SecretKey)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", s.endpoint, time.Second)
		if err == nil {
			conn.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("chaos: versitygw exited at start (port %d taken?)", port)
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("chaos: versitygw does not answer at %s", s.endpoint)
		}
	}
}

// args are the flags that point a node at the server.
func (s *s3Server) args() []string {
	return []string{"--s3-endpoint", s.endpoint, "--s3-bucket", "floe-chaos", "--s3-region", "us-east-1",
		"--s3-path-style", "--s3-create-bucket", "--s3-access-key", s3AccessKey, "--s3-secret-key-file", s.secretFile}
}

func (s *s3Server) close() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}
