package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/state"
)

// statusError is a failure with an ASO condition reason of its own
// (SubscriptionMismatch, AzureResourceNotFound, ...).
type statusError struct {
	reason, severity, msg string
	err                   error
}

func (e *statusError) Error() string { return e.reason + ": " + e.msg }
func (e *statusError) Unwrap() error { return e.err }

func isNotFound(err error) bool { return errors.Is(err, azure.ErrNotFound) }

// retryAfter is ARM's Retry-After for a retryable error, else zero.
func retryAfter(err error) time.Duration {
	var ae *azure.ARMError
	if errors.As(err, &ae) && ae.Retryable {
		return ae.RetryAfter
	}
	return 0
}

// failedCondition maps an error to ASO's Ready condition: ARM's own error code
// as the reason, Error severity for codes no retry can fix and Warning for
// the rest; the message is ARM's message, never "UnknownError".
func failedCondition(err error) state.Condition {
	c := state.Condition{Type: state.ConditionReady, Status: state.StatusFalse}
	var se *statusError
	var ae *azure.ARMError
	switch {
	case errors.As(err, &se):
		c.Reason, c.Severity, c.Message = se.reason, se.severity, se.msg
	case errors.As(err, &ae):
		c.Reason, c.Message = ae.Code, ae.Message
		for _, d := range ae.Details {
			c.Message += fmt.Sprintf("; %s: %s", d.Code, d.Message)
		}
		c.Severity = state.SeverityWarning
		if !ae.Retryable {
			c.Severity = state.SeverityError
		}
		if ae.RetryAfter > 0 && ae.Retryable {
			c.Message += fmt.Sprintf(" (retry after %s)", ae.RetryAfter)
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		c.Reason, c.Severity, c.Message = "Failed", state.SeverityWarning, "interrupted: "+err.Error()
	default:
		c.Reason, c.Severity, c.Message = "Failed", state.SeverityWarning, err.Error()
	}
	if c.Reason == "" {
		c.Reason = "Failed"
	}
	return c
}
