package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
)

// policyReread is how often serve reads --policy-file again (a change is
// taken when two reads in a row see it).
const policyReread = 5 * time.Second

// accessSettings are serve's flags for rights and the audit trail.
type accessSettings struct {
	policyFile     string
	auditRetention time.Duration
}

func (a *accessSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.policyFile, "policy-file", "", "policy file granting rights per namespace (read, sync, approve, admin) to groups, users and tokens, "+
		"in the model of Argo CD's policy.csv (see docs/security.md); read every 5 s, a change taken within 10 s. Without it every caller that passed authentication may do everything")
	durationFlag(fs, &a.auditRetention, "audit-retention", api.DefaultAuditRetention, "how long the audit trail (sign-ins, syncs, approvals, refusals, token use) is kept in the state")
}

// apply loads the policy file into o and keeps reading it again while ctx
// lasts.
func (a *accessSettings) apply(ctx context.Context, log *slog.Logger, o *api.Options) error {
	if a.auditRetention < 0 {
		return fmt.Errorf("--audit-retention %s: want a positive duration", a.auditRetention)
	}
	if a.policyFile == "" {
		return nil
	}
	pf, err := access.LoadPolicyFile(a.policyFile)
	if err != nil {
		return fmt.Errorf("--policy-file: %w", err)
	}
	o.Policy = pf.Policy
	go pf.Watch(ctx, policyReread, log)
	log.Info("rights per namespace from the policy file", "file", a.policyFile, "default", pf.Policy().Default())
	return nil
}

// auditor returns the audit trail's recorder over the open state, pruning
// it while ctx lasts.
func (a *accessSettings) auditor(ctx context.Context, e *env) *api.Auditor {
	au := api.NewAuditor(e.db, e.log, a.auditRetention)
	go au.Run(ctx)
	return au
}
