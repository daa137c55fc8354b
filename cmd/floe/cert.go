package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/tlsconf"
)

// certSpecs are the subcommands of floe cert: a CA and the certificates
// it signs for a cluster, and gossip keys, written as files.
func certSpecs(env *cliEnv) []cmdSpec {
	validity := func(fs *flag.FlagSet) *int {
		return fs.Int("days", 365, "days the certificate is valid")
	}
	return []cmdSpec{
		{usage: "cert ca --dir DIR [--name NAME] [--days N]",
			summary: "make a cluster's CA: DIR/ca.crt (give it to every node and client) and DIR/ca.key (keep it safe)",
			define: func(fs *flag.FlagSet) runFunc {
				dir := fs.String("dir", "", "folder to write ca.crt and ca.key to")
				name := fs.String("name", "Floe cluster CA", "the CA's name")
				days := validity(fs)
				return func(_ context.Context, pos []string) error {
					if err := certArgs(pos, *dir, *days); err != nil {
						return err
					}
					ca, err := tlsconf.NewCA(*name, time.Duration(*days)*24*time.Hour)
					if err != nil {
						return err
					}
					if err := writeNew(*dir, "ca.crt", ca.CertPEM, 0o644); err != nil {
						return err
					}
					if err := writeNew(*dir, "ca.key", ca.KeyPEM, 0o600); err != nil {
						return err
					}
					fmt.Fprintf(env.stdout, "wrote %s and %s\n", filepath.Join(*dir, "ca.crt"), filepath.Join(*dir, "ca.key"))
					return nil
				}
			}},
		{usage: "cert node --dir DIR --id ID [--host HOST,...] [--days N]",
			summary: "make node ID's certificate, signed by DIR's CA: DIR/nodeID.crt and DIR/nodeID.key",
			define: func(fs *flag.FlagSet) runFunc {
				dir := fs.String("dir", "", "folder of the CA (ca.crt, ca.key), and of the files written")
				id := fs.Uint("id", 0, "the node's id (floe serve --id)")
				hosts := fs.String("host", "", "comma-separated host names and IP addresses the node is reached at (recorded in the certificate for tools that check them)")
				days := validity(fs)
				return func(_ context.Context, pos []string) error {
					if err := certArgs(pos, *dir, *days); err != nil {
						return err
					}
					if *id == 0 || *id > 1<<32-1 {
						return fmt.Errorf("%w: --id must be a positive 32-bit integer", errUsage)
					}
					ca, err := loadCA(*dir)
					if err != nil {
						return err
					}
					leaf, err := ca.IssueNode(uint32(*id), splitList(*hosts), time.Duration(*days)*24*time.Hour)
					if err != nil {
						return err
					}
					return writeLeaf(env, *dir, "node"+strconv.FormatUint(uint64(*id), 10), leaf)
				}
			}},
		{usage: "cert user --dir DIR --name NAME [--days N]",
			summary: "make user NAME's client certificate, signed by DIR's CA: DIR/user-NAME.crt and .key",
			define: func(fs *flag.FlagSet) runFunc {
				dir := fs.String("dir", "", "folder of the CA (ca.crt, ca.key), and of the files written")
				name := fs.String("name", "", "the user's name (its principal is user:NAME)")
				days := validity(fs)
				return func(_ context.Context, pos []string) error {
					if err := certArgs(pos, *dir, *days); err != nil {
						return err
					}
					ca, err := loadCA(*dir)
					if err != nil {
						return err
					}
					leaf, err := ca.IssueUser(*name, time.Duration(*days)*24*time.Hour)
					if err != nil {
						return fmt.Errorf("%w: --name: %v", errUsage, err)
					}
					return writeLeaf(env, *dir, "user-"+*name, leaf)
				}
			}},
		{usage: "cert gossip-key [--out FILE]",
			summary: "make a gossip encryption key (for --gossip-key-file): printed, or written to a new FILE",
			define: func(fs *flag.FlagSet) runFunc {
				out := fs.String("out", "", "write the key to this new file (mode 0600) instead of printing it")
				return func(_ context.Context, pos []string) error {
					if len(pos) != 0 {
						return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
					}
					key, err := gossip.NewKey()
					if err != nil {
						return err
					}
					if *out == "" {
						fmt.Fprintln(env.stdout, key)
						return nil
					}
					if err := writeNew(filepath.Dir(*out), filepath.Base(*out), []byte(key+"\n"), 0o600); err != nil {
						return err
					}
					fmt.Fprintf(env.stdout, "wrote %s\n", *out)
					return nil
				}
			}},
	}
}

func certArgs(pos []string, dir string, days int) error {
	switch {
	case len(pos) != 0:
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
	case dir == "":
		return fmt.Errorf("%w: --dir is required", errUsage)
	case days <= 0:
		return fmt.Errorf("%w: --days must be positive", errUsage)
	}
	return nil
}

// loadCA reads dir's CA.
func loadCA(dir string) (*tlsconf.CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("no CA in %s (make one with floe cert ca --dir %s): %w", dir, dir, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, fmt.Errorf("the CA's key: %w", err)
	}
	return tlsconf.ParseCA(certPEM, keyPEM)
}

func writeLeaf(env *cliEnv, dir, base string, leaf tlsconf.Leaf) error {
	if err := writeNew(dir, base+".crt", leaf.CertPEM, 0o644); err != nil {
		return err
	}
	if err := writeNew(dir, base+".key", leaf.KeyPEM, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "wrote %s and %s\n", filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"))
	return nil
}

// writeNew writes a file that must not exist yet: a certificate or key is
// never overwritten by mistake.
func writeNew(dir, name string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; remove it first to make a new one", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
