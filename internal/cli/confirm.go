package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
)

// stdinIsTerminal and stdin are what apply asks on; tests replace them.
var (
	stdinIsTerminal           = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
	stdin           io.Reader = os.Stdin
)

// errDeclined: the user did not answer yes.
var errDeclined = errors.New("apply cancelled: nothing was applied")

// confirmThenApply plans (reading Azure when refresh), shows the plan and,
// when it deletes anything, asks for "yes" before applying exactly that
// plan (as a saved plan: refused with reconcile.ErrStalePlan if the branch,
// the state or Azure moved meanwhile). A plan without deletions is applied
// without asking. shown says the first report's plan was printed.
func confirmThenApply(ctx context.Context, r *reconcile.Reconciler, refresh, approveDeletions bool, stdout io.Writer) (rep *reconcile.Report, shown bool, err error) {
	dry, err := r.Once(ctx, reconcile.Options{Trigger: "cli", Refresh: refresh, All: refresh, DryRun: true, ApproveDeletions: approveDeletions})
	if err != nil || dry == nil || dry.Plan == nil {
		return dry, false, err
	}
	deletions := dry.Plan.Summary()[planner.Delete]
	if deletions == 0 {
		rep, err = r.Once(ctx, reconcile.Options{Trigger: "cli", Refresh: refresh, ApproveDeletions: approveDeletions})
		return rep, false, err
	}
	if err := planner.RenderText(stdout, dry.Plan, planner.TextOptions{}); err != nil {
		return nil, false, err
	}
	fmt.Fprintf(stdout, "\nThis deletes %d %s from Azure.\nDo you want to apply this plan? Only 'yes' will be accepted (--auto-approve skips this question): ", deletions, plural(deletions, "resource", "resources"))
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		fmt.Fprintln(stdout)
		return nil, false, errDeclined
	}
	sp, err := r.SavePlan(dry, refresh, Version)
	if err != nil {
		return nil, false, err
	}
	rep, err = r.ApplySaved(ctx, sp, approveDeletions)
	return rep, true, err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
