package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gitaso/gitaso/state"
)

// stateCmd is `gitaso state`, maintenance of the state file.
func stateCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Maintain the state file (compact)",
		Args:  cobra.NoArgs,
	}
	var file string
	compact := &cobra.Command{
		Use:   "compact",
		Short: "Give the state file's free pages back to the file system (stop gitaso serve first)",
		Long: `compact rewrites the state file without its free pages. bbolt reuses the pages a run frees but never
shrinks the file, so a file that once held more (a large revision since removed, many runs before gitaso
wrote only what changed) keeps its size. The file is copied, synced and renamed over the original, so an
interruption leaves the old file or the new one. It needs the file to itself: stop 'gitaso serve' first
(it holds a lock; compact then fails at once, saying so). The encryption key file is not touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			before, after, err := state.Compact(file)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s: %.1f MB → %.1f MB\n", file, float64(before)/1e6, float64(after)/1e6)
			return err
		},
	}
	compact.Flags().StringVar(&file, "state", "gitaso.db", "bbolt state file")
	cmd.AddCommand(compact)
	return cmd
}
