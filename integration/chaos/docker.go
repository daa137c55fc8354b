package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Container mode: each node is a container of an image FROM scratch that
// holds only the floe binary, on a Docker bridge network of the cluster's
// own (10.X.0.0/16, node i at 10.X.i.2, the host at 10.X.0.1). The host
// bridges the containers' traffic through iptables (Docker turns on
// net.bridge.bridge-nf-call-iptables), so the same filter chain as in
// process mode cuts any pair of nodes apart. A node's data folder is a
// folder of the host mounted at /data, so wiping, tearing and bit flips
// work on the host's files, and a tmpfs mounted there before the
// container is made fills up as in process mode. The S3 server runs on
// the host, on the bridge's address.

// labelOwner marks the containers and networks of a chaos cluster with
// the tag of the process that made them (see ownerAlive).
const labelOwner = "floe.chaos.owner"

// DockerAvailable reports whether a Docker engine answers here.
func DockerAvailable(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("chaos: containers need the docker CLI: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: no Docker engine answers: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// output runs a command and returns its standard output, or its error
// with what it printed.
func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// staticBinary says why path cannot run in an empty image, if it cannot.
func staticBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("chaos: %s is dynamically linked; a container FROM scratch needs a static one (CGO_ENABLED=0 go build ./cmd/floe)", path)
		}
	}
	return nil
}

// ensureImage builds (once per binary content) an image FROM scratch
// holding the binary as /floe, and returns its name.
func ensureImage(ctx context.Context, binary string, logf func(string, ...any)) (string, error) {
	if err := staticBinary(binary); err != nil {
		return "", err
	}
	f, err := os.Open(binary)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", err
	}
	image := "floe-chaos:" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := output(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image); err == nil {
		return image, nil
	}
	dir, err := os.MkdirTemp("", "floe-chaos-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := copyFile(binary, filepath.Join(dir, "floe")); err != nil {
		return "", err
	}
	// /tmp exists in the image: the node's temporary files go there.
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return "", err
	}
	dockerfile := "FROM scratch\nCOPY tmp /tmp\nCOPY floe /floe\nENTRYPOINT [\"/floe\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", err
	}
	logf("building image %s from %s", image, binary)
	if _, err := output(ctx, "docker", "build", "-q", "-t", image, dir); err != nil {
		return "", fmt.Errorf("chaos: build the node image: %w", err)
	}
	return image, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// setUpDocker makes the cluster's bridge network.
func (n *network) setUpDocker(ctx context.Context) error {
	_, err := output(ctx, "docker", "network", "create", "--driver", "bridge", "--subnet", n.subnet(),
		"--gateway", n.hostAddr(), "--label", labelOwner+"="+n.tag(), n.prefix)
	if err != nil {
		return fmt.Errorf("chaos: make the cluster's Docker network: %w", err)
	}
	n.docker = true
	return nil
}

// container names node i's container.
func (n *network) container(i int) string { return n.ns(i) }

// createContainer makes node i's container (not started) with the data
// folder mounted at /data and args after the image's /floe.
func (n *network) createContainer(ctx context.Context, i int, image, dataDir string, args []string) error {
	create := []string{"create", "--name", n.container(i), "--hostname", fmt.Sprintf("node%d", i),
		"--network", n.prefix, "--ip", n.addr(i), "--label", labelOwner + "=" + n.tag(),
		"--user", "0:0", "--volume", dataDir + ":/data", "--stop-timeout", "10", image}
	_, err := output(ctx, "docker", append(create, args...)...)
	return err
}

// containerPid is the host pid of a running container's process (0 when
// it does not run).
func (n *network) containerPid(ctx context.Context, i int) (int, error) {
	out, err := output(ctx, "docker", "inspect", "--format", "{{.State.Pid}}", n.container(i))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// tearDownDocker removes the containers and the network.
func (n *network) tearDownDocker(ctx context.Context) error {
	var first error
	for i := 1; i <= n.nodes; i++ {
		if _, err := output(ctx, "docker", "rm", "--force", "--volumes", n.container(i)); err != nil &&
			!strings.Contains(err.Error(), "No such container") && first == nil {
			first = err
		}
	}
	if _, err := output(ctx, "docker", "network", "rm", n.prefix); err != nil && first == nil {
		first = err
	}
	return first
}

// sweepStaleDocker removes the containers and networks of chaos clusters
// whose process is gone.
func sweepStaleDocker(ctx context.Context) {
	if exec.Command("docker", "version").Run() != nil {
		return
	}
	for _, kind := range [][]string{{"ps", "--all", "{{.Names}}"}, {"network", "ls", "{{.Name}}"}} {
		out, err := output(ctx, "docker", kind[0], kind[1], "--filter", "label="+labelOwner,
			"--format", kind[2]+"\t{{.Label \""+labelOwner+"\"}}")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			name, tag, ok := strings.Cut(line, "\t")
			if !ok || ownerAlive(tag) {
				continue
			}
			if kind[0] == "ps" {
				_, _ = output(ctx, "docker", "rm", "--force", "--volumes", name)
			} else {
				_, _ = output(ctx, "docker", "network", "rm", name)
			}
		}
	}
}
