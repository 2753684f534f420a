package aso

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// This file is the registry of ASO's hand-written per-kind code (the
// extensions in ASO's api/*/customizations, "hooks" in kinds.json), one
// entry per group/kind. Each hook phase is a type of its own; the pure ones
// (checks on ARM's answer, error classification) take bytes and return a
// value, the ones that need Azure take an ARM. The functions at the end of
// the file (ModifyPayload, PreReconcile, PostReconcile, Delete,
// ClassifyError, Succeeded) run a kind's hooks and are what the executor
// calls; a kind without a hook for a phase gets ASO's default behaviour.
// docs/hooks.md lists every hook and what gitaso does with it.

// Target is what a hook knows of the resource it runs for: where it lives in
// ARM and what the manifest says.
type Target struct {
	Group, Kind     string // ASO's group and kind: "keyvault.azure.com", "Vault"
	Namespace, Name string // the manifest's
	AzureName       string
	ARMID           string
	APIVersion      string // the kind's ARM api-version
	// OwnerName, OwnerARMID and OwnerAPIVersion describe spec.owner as the
	// plan resolved it; empty when the resource has none (or is owned by a
	// resource group the plan does not declare). A PreReconcileOwnerCheck
	// reads the owner at OwnerARMID.
	OwnerName       string
	OwnerARMID      string
	OwnerAPIVersion string
	// Spec is the manifest's spec (never secret values: ASO specs refer to
	// Secrets by name).
	Spec map[string]any
}

// key is the registry key of t's kind.
func (t Target) key() string { return t.Group + "/" + t.Kind }

// PayloadModifier rewrites the converted body just before the PUT (ASO's
// ARMResourceModifier). It may read Azure; the body's other members keep
// their order and bytes.
type PayloadModifier func(ctx context.Context, arm ARM, t Target, body []byte) ([]byte, error)

// PreReconcileCheck decides from ARM's current view of the resource (its GET
// body, nil when it does not exist) whether a PUT may be sent now (ASO's
// PreReconciliationChecker, which reads the resource's status).
type PreReconcileCheck func(t Target, status []byte) CheckResult

// PreReconcileOwnerCheck decides from ARM's view of the resource's owner
// (its GET body, nil when it does not exist) whether a PUT of the resource
// may be sent now (ASO's PreReconciliationOwnerChecker).
type PreReconcileOwnerCheck func(t Target, owner []byte) CheckResult

// PostReconcileCheck decides from ARM's answer to the PUT (the resource as
// ARM holds it) whether the resource is Ready (ASO's
// PostReconciliationChecker).
type PostReconcileCheck func(t Target, status []byte) PostResult

// CustomDelete deletes the resource in place of the plain DELETE (ASO's
// Deleter). It needs Azure.
type CustomDelete func(ctx context.Context, arm ARM, t Target) error

// ErrorClassifier re-classifies an ARM error of one kind (ASO's
// ErrorClassifier): it gets ARM's code and message and the generic
// classification, and returns the classification that applies.
type ErrorClassifier func(e CloudError, generic Classification) Classification

// SuccessHandler runs after a successful PUT with ARM's answer (ASO's
// SuccessfulCreationHandler); an error makes the resource not Ready.
type SuccessHandler func(t Target, status []byte) (Success, error)

// Hooks are the hooks of one kind; a nil member means ASO's default.
type Hooks struct {
	ModifyPayload     PayloadModifier
	PreReconcile      PreReconcileCheck
	PreReconcileOwner PreReconcileOwnerCheck
	PostReconcile     PostReconcileCheck
	Delete            CustomDelete
	ClassifyError     ErrorClassifier
	Success           SuccessHandler
}

// hooks is the registry, filled by the hooks_<area>.go files' init.
var hooks = map[string]*Hooks{}

// register returns the entry of group/kind, creating it.
func register(group, kind string) *Hooks {
	k := group + "/" + kind
	h := hooks[k]
	if h == nil {
		h = &Hooks{}
		hooks[k] = h
	}
	return h
}

// HooksFor returns the hooks of a kind (the zero Hooks when it has none).
func HooksFor(group, kind string) Hooks {
	if h := hooks[group+"/"+kind]; h != nil {
		return *h
	}
	return Hooks{}
}

// CheckAction is a pre-reconcile check's answer.
type CheckAction int

// The answers, as ASO's PreReconcileCheckResult has them.
const (
	// Proceed: send the PUT.
	Proceed CheckAction = iota
	// Postpone: send nothing now and change no condition; the next run
	// checks again (ASO's PostponeReconcile).
	Postpone
	// Block: send nothing now; Ready is False with reason
	// ReconciliationBlocked (a Warning, retried) and the check's message
	// (ASO's BlockReconcile).
	Block
)

var checkActionNames = [...]string{"proceed", "postpone", "block"}

// String returns the answer's name.
func (a CheckAction) String() string {
	if a < 0 || int(a) >= len(checkActionNames) {
		return fmt.Sprintf("CheckAction(%d)", int(a))
	}
	return checkActionNames[a]
}

// ASO's Ready reasons for the hooks' outcomes.
const (
	ReasonReconcileBlocked     = "ReconciliationBlocked"
	ReasonReconcilePostponed   = "ReconciliationPostponed"
	ReasonPostReconcileFailure = "PostReconciliationFailure"
	ReasonFailed               = "Failed"
)

// CheckResult is a pre-reconcile check's answer and why.
type CheckResult struct {
	Action  CheckAction
	Message string
}

// Reason is ASO's Ready reason for the answer ("" for Proceed).
func (c CheckResult) Reason() string {
	switch c.Action {
	case Block:
		return ReasonReconcileBlocked
	case Postpone:
		return ReasonReconcilePostponed
	}
	return ""
}

// proceed is the answer that lets the PUT go.
var proceed = CheckResult{Action: Proceed}

func block(format string, args ...any) CheckResult {
	return CheckResult{Action: Block, Message: fmt.Sprintf(format, args...)}
}

// PostResult is a post-reconcile check's answer.
type PostResult struct {
	// Ready is false while the resource waits for something outside the PUT
	// (an approval, a protection being configured): Ready is False with
	// reason PostReconciliationFailure (a Warning, retried) and Message.
	Ready   bool
	Message string
	// Status, when not nil, replaces ARM's answer as the resource's status
	// (ASO trims a subnet's ipConfigurations beyond 2000).
	Status []byte
	// Then, when set, is a request to send before reporting (ASO syncs a
	// backup instance whose protection failed with a user error).
	Then *Call
}

// Call is one ARM request a hook asks for.
type Call struct {
	Method, Path, APIVersion string
	Body                     []byte
}

// Classification says whether an ARM error may go away by itself.
type Classification int

// The classifications (ASO's core.ErrorRetryable and core.ErrorFatal).
const (
	Retryable Classification = iota
	Fatal
)

// String returns "retryable" or "fatal".
func (c Classification) String() string {
	if c == Fatal {
		return "fatal"
	}
	return "retryable"
}

// CloudError is what an ErrorClassifier reads of ARM's error.
type CloudError struct {
	Code, Message string
}

// Success is what a SuccessHandler learned.
type Success struct {
	// ChildResourceID, when set, is the ARM ID children of the resource are
	// created under instead of its own (ASO's SetChildResourceIDOverride:
	// an Alias's children live in the subscription it created).
	ChildResourceID string
}

// ConditionError is a hook's failure with ASO's Ready reason and severity:
// Fatal failures are Errors (no retry until the manifest changes), the
// others Warnings.
type ConditionError struct {
	Reason  string
	Fatal   bool
	Message string
	Err     error
}

func (e *ConditionError) Error() string { return e.Reason + ": " + e.Message }

// Unwrap returns the underlying error, if any.
func (e *ConditionError) Unwrap() error { return e.Err }

// ModifyPayload runs the kind's payload modifier on body (a no-op for kinds
// without one).
func ModifyPayload(ctx context.Context, arm ARM, t Target, body []byte) ([]byte, error) {
	h := hooks[t.key()]
	if h == nil || h.ModifyPayload == nil {
		return body, nil
	}
	return h.ModifyPayload(ctx, arm, t, body)
}

// PreReconcile runs the kind's pre-reconcile checks: the owner's first (ASO
// checks the owner before the resource), each fed by a GET at the
// resource's (or owner's) api-version. It answers Proceed without a request
// for kinds without checks. A 404 counts as "nothing there yet".
func PreReconcile(ctx context.Context, arm ARM, t Target) (CheckResult, error) {
	h := hooks[t.key()]
	if h == nil {
		return proceed, nil
	}
	if h.PreReconcileOwner != nil && t.OwnerARMID != "" {
		v := t.OwnerAPIVersion
		if v == "" {
			v = t.APIVersion
		}
		owner, err := getOrNil(ctx, arm, t.OwnerARMID, v)
		if err != nil {
			return CheckResult{}, fmt.Errorf("read owner %s for its pre-reconcile check: %w", t.OwnerARMID, err)
		}
		if c := h.PreReconcileOwner(t, owner); c.Action != Proceed {
			return c, nil
		}
	}
	if h.PreReconcile != nil {
		cur, err := getOrNil(ctx, arm, t.ARMID, t.APIVersion)
		if err != nil {
			return CheckResult{}, fmt.Errorf("read %s for its pre-reconcile check: %w", t.ARMID, err)
		}
		return h.PreReconcile(t, cur), nil
	}
	return proceed, nil
}

// HasPreReconcile reports whether PreReconcile reads anything for the kind.
func HasPreReconcile(group, kind string) bool {
	h := hooks[group+"/"+kind]
	return h != nil && (h.PreReconcile != nil || h.PreReconcileOwner != nil)
}

// PostReconcile runs the kind's post-reconcile check on ARM's answer to the
// PUT and sends the request it asks for (a failure of that request makes
// the resource not Ready, with the error). Kinds without a check are Ready.
func PostReconcile(ctx context.Context, arm ARM, t Target, status []byte) (PostResult, error) {
	h := hooks[t.key()]
	if h == nil || h.PostReconcile == nil {
		return PostResult{Ready: true}, nil
	}
	res := h.PostReconcile(t, status)
	if c := res.Then; c != nil {
		var err error
		switch c.Method {
		case "POST":
			_, err = arm.Post(ctx, c.Path, c.APIVersion, c.Body)
		default:
			err = fmt.Errorf("hook call %s is not supported", c.Method)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %s %s: %w", res.Message, c.Method, c.Path, err)
		}
	}
	return res, nil
}

// Delete deletes the resource as ASO does: the kind's custom delete, or a
// plain DELETE at the kind's api-version.
func Delete(ctx context.Context, arm ARM, t Target) error {
	if h := hooks[t.key()]; h != nil && h.Delete != nil {
		return h.Delete(ctx, arm, t)
	}
	return arm.Delete(ctx, t.ARMID, t.APIVersion)
}

// ClassifyError returns the classification of an ARM error for a kind:
// the kind's classifier applied to generic (the classification every kind
// shares), or generic itself.
func ClassifyError(group, kind string, e CloudError, generic Classification) Classification {
	if h := hooks[group+"/"+kind]; h != nil && h.ClassifyError != nil {
		return h.ClassifyError(e, generic)
	}
	return generic
}

// Succeeded runs the kind's success handler on ARM's answer to the PUT.
func Succeeded(t Target, status []byte) (Success, error) {
	if h := hooks[t.key()]; h != nil && h.Success != nil {
		return h.Success(t, status)
	}
	return Success{}, nil
}

// getOrNil GETs a resource; nil without error when ARM answers 404.
func getOrNil(ctx context.Context, arm ARM, id, apiVersion string) ([]byte, error) {
	b, err := arm.Get(ctx, id, apiVersion)
	if err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return b, nil
}

// stateBlocks reports whether state is set and not one of ok (ASO's
// "provisioning state blocks reconciliation", compared lower-cased).
func stateBlocks(state string, ok ...string) bool {
	if state == "" {
		return false
	}
	for _, s := range ok {
		if strings.EqualFold(state, s) {
			return false
		}
	}
	return true
}

type loggerKey struct{}

// WithLogger returns ctx carrying the logger the hooks report to (what they
// looked up and decided, as ASO logs it); without one they use
// slog.Default().
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}
