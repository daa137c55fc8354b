package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// newPasswordEnv is where floe user create and passwd read the new
// password from, when set (FLOE_PASSWORD is the signing-in user's).
const newPasswordEnv = "FLOE_NEW_PASSWORD"

// userCmds are the subcommands of floe user.
func userCmds(env *cliEnv) []clientCmd {
	var newPasswordFile string
	passwordFlag := func(fs *flag.FlagSet) {
		fs.StringVar(&newPasswordFile, "new-password-file", "", "file whose first line is the new password (default: "+newPasswordEnv+", or a prompt)")
	}
	return []clientCmd{
		{usage: "user create NAME [--new-password-file FILE]", summary: "create a user who signs in with a password", nargs: 1,
			flags: passwordFlag,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				p, err := newPassword(newPasswordFile, pos[0])
				if err != nil {
					return err
				}
				if err := c.Admin().CreateUser(ctx, pos[0], p); err != nil {
					return err
				}
				return printResult(env, cf, map[string]any{"created": pos[0]}, "created user %s\n", pos[0])
			}},
		{usage: "user passwd NAME [--new-password-file FILE]", summary: "change a user's password (your own, or anyone's as cluster-admin)", nargs: 1,
			flags: passwordFlag,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				p, err := newPassword(newPasswordFile, pos[0])
				if err != nil {
					return err
				}
				if err := c.Admin().SetPassword(ctx, pos[0], p); err != nil {
					return err
				}
				return printResult(env, cf, map[string]any{"changed": pos[0]}, "changed the password of %s\n", pos[0])
			}},
		{usage: "user delete NAME", summary: "delete a user (its ACL entries stay)", nargs: 1,
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
				if err := c.Admin().DeleteUser(ctx, pos[0]); err != nil {
					return err
				}
				return printResult(env, cf, map[string]any{"deleted": pos[0]}, "deleted user %s\n", pos[0])
			}},
		{usage: "user list", summary: "list the users who sign in with passwords",
			run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
				users, err := c.Admin().ListUsers(ctx)
				if err != nil {
					return err
				}
				if cf.output == "json" {
					return printJSON(env, users)
				}
				w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tCREATED\tPASSWORD CHANGED")
				for _, u := range users {
					fmt.Fprintf(w, "%s\t%s\t%s\n", u.Name, u.CreatedAt.UTC().Format(time.RFC3339), u.ChangedAt.UTC().Format(time.RFC3339))
				}
				return w.Flush()
			}},
	}
}

// newPassword reads a new password: FLOE_NEW_PASSWORD, the file, or a
// prompt asked twice.
func newPassword(file, user string) (string, error) {
	if p := os.Getenv(newPasswordEnv); p != "" {
		return p, nil
	}
	if file != "" {
		return readPasswordFile(file)
	}
	p, err := promptPassword("new password for " + user)
	if err != nil {
		return "", fmt.Errorf("no new password: set %s, give --new-password-file, or run on a terminal to be asked", newPasswordEnv)
	}
	again, err := promptPassword("again")
	if err != nil {
		return "", err
	}
	if p != again {
		return "", fmt.Errorf("the passwords differ")
	}
	if p == "" {
		return "", fmt.Errorf("an empty password")
	}
	return p, nil
}
