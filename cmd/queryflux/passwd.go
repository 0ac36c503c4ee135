package main

// `queryflux passwd`: prints the passwordHash forms of a password
// for settings.security.users, so no cleartext password ever goes into a configuration.

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/queryflux/queryflux/internal/policy"
)

func newPasswdCommand() *cobra.Command {
	var form string
	var iterations int
	cmd := &cobra.Command{
		Use:   "passwd [--form scram|mysql|bcrypt|all]",
		Short: "Print the passwordHash of a password read from stdin (one line)",
		Long: `Reads a password (the first line of stdin) and prints the passwordHash forms for a user of
settings.security.users. One form per user:
  scram   SCRAM-SHA-256$...  PostgreSQL (SCRAM), Trino and Flight SQL (Basic)
  mysql   *<40 HEX>          MySQL (mysql_native_password), PostgreSQL (cleartext), Trino, Flight SQL
  bcrypt  $2b$...            PostgreSQL (cleartext), Trino and Flight SQL (Basic)
Example:  printf '%s\n' "$PW" | queryflux passwd --form scram`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := readPassword(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return printHashes(cmd.OutOrStdout(), pw, form, iterations)
		},
	}
	cmd.Flags().StringVar(&form, "form", "all", "scram, mysql, bcrypt or all")
	cmd.Flags().IntVar(&iterations, "iterations", 4096, "SCRAM-SHA-256 iterations")
	return cmd
}

func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("no password on stdin")
	}
	return pw, nil
}

func printHashes(w io.Writer, pw, form string, iterations int) error {
	forms := map[string]func() (string, error){
		"scram": func() (string, error) {
			salt := make([]byte, 16)
			if _, err := rand.Read(salt); err != nil {
				return "", err
			}
			return policy.SCRAMHash(pw, salt, iterations)
		},
		"mysql": func() (string, error) { return policy.NativeHash(pw), nil },
		"bcrypt": func() (string, error) {
			h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
			return string(h), err
		},
	}
	names := []string{"scram", "mysql", "bcrypt"}
	if form != "all" {
		if forms[form] == nil {
			return fmt.Errorf("--form %q: want scram, mysql, bcrypt or all", form)
		}
		names = []string{form}
	}
	for _, name := range names {
		h, err := forms[name]()
		if err != nil {
			return fmt.Errorf("%s hash: %w", name, err)
		}
		if len(names) == 1 {
			fmt.Fprintln(w, h)
		} else {
			fmt.Fprintf(w, "%-7s %s\n", name+":", h)
		}
	}
	return nil
}
