package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitaso/gitaso/api"
)

// tokenCmd is `gitaso token add|revoke|list`: the tokens file of gitaso
// serve --api-tokens-file, edited by atomic replacement so that a running
// daemon re-reads it at once.
func tokenCmd(stdout io.Writer) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Add, revoke and list the named bearer tokens of gitaso serve --api-tokens-file",
		Long: `token edits the tokens file gitaso serve reads with --api-tokens-file: one line a token, its name,
the SHA-256 of the token and optional groups. The token itself is printed once, by add, and never stored.
A running gitaso serve re-reads the file when it changes: a revoked token is refused at once.

Rotate a token: add a new one (another name), give it to the client, then revoke the old one.`,
	}
	cmd.PersistentFlags().StringVar(&file, "tokens-file", "", "the tokens file (required)")
	var groups []string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a token named NAME, add its hash to the file and print the token (once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := api.NewToken()
			if err != nil {
				return err
			}
			e := api.TokenEntry{Name: args[0], Hash: api.HashToken(tok), Groups: groups}
			if err := editTokens(file, func(es []api.TokenEntry) ([]api.TokenEntry, error) { return append(es, e), nil }); err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, tok)
			return err
		},
	}
	add.Flags().StringSliceVar(&groups, "group", nil, "a group the token's identity is in, for the policy (repeatable)")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Remove the token named NAME from the file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editTokens(file, func(es []api.TokenEntry) ([]api.TokenEntry, error) {
				for i, e := range es {
					if e.Name == args[0] {
						return append(es[:i], es[i+1:]...), nil
					}
				}
				return nil, fmt.Errorf("%s has no token named %s", file, args[0])
			})
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Print the names and groups of the tokens in the file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			es, err := readTokens(file)
			if err != nil {
				return err
			}
			for _, e := range es {
				if _, err := fmt.Fprintf(stdout, "%s\t%s\n", e.Name, strings.Join(e.Groups, ",")); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.AddCommand(add, revoke, list)
	return cmd
}

func readTokens(file string) ([]api.TokenEntry, error) {
	if file == "" {
		return nil, errors.New("--tokens-file is required")
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	return api.ParseTokens(bytes.NewReader(b), file)
}

// editTokens rewrites the tokens file with edit's entries (mode 0600,
// through a temporary file and a rename); the entries are checked as
// gitaso serve reads them.
func editTokens(file string, edit func([]api.TokenEntry) ([]api.TokenEntry, error)) error {
	es, err := readTokens(file)
	if err != nil {
		return err
	}
	if es, err = edit(es); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# gitaso serve --api-tokens-file: NAME sha256:HEX [GROUP,...] (gitaso token add|revoke edits it)\n")
	for _, e := range es {
		b.WriteString(e.Line() + "\n")
	}
	if _, err := api.ParseTokens(strings.NewReader(b.String()), file); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tokens-*")
	if err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(b.String())
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write tokens %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write tokens %s: %w", file, err)
	}
	return nil
}
