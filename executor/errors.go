package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
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
func failedCondition(err error) record.Condition {
	c := record.Condition{Type: record.ConditionReady, Status: record.StatusFalse}
	var se *statusError
	var ce *aso.ConditionError
	var ae *azure.ARMError
	var afe *azidentity.AuthenticationFailedError
	switch {
	case errors.As(err, &se):
		c.Reason, c.Severity, c.Message = se.reason, se.severity, se.msg
	case errors.As(err, &ce):
		// A hook's failure with ASO's reason (a key vault to recover in
		// another resource group, an alias without a subscription).
		c.Reason, c.Severity, c.Message = ce.Reason, record.SeverityWarning, ce.Message
		if ce.Fatal {
			c.Severity = record.SeverityError
		}
	case errors.As(err, &ae):
		c.Reason, c.Message = ae.Code, ae.Message
		for _, d := range ae.Details {
			c.Message += fmt.Sprintf("; %s: %s", d.Code, d.Message)
		}
		c.Severity = record.SeverityWarning
		if !ae.Retryable {
			c.Severity = record.SeverityError
		}
		if ae.RetryAfter > 0 && ae.Retryable {
			c.Message += fmt.Sprintf(" (retry after %s)", ae.RetryAfter)
		}
	case errors.As(err, &afe):
		// Entra ID refused the credential: azidentity's message is a
		// multi-line dump of the token response; keep its first line and
		// Entra's own description (AADSTS code, trace and correlation IDs).
		c.Reason, c.Severity, c.Message = "Failed", record.SeverityWarning, authMessage(err, afe)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		c.Reason, c.Severity, c.Message = "Failed", record.SeverityWarning, "interrupted: "+err.Error()
	default:
		c.Reason, c.Severity, c.Message = "Failed", record.SeverityWarning, err.Error()
	}
	if c.Reason == "" {
		c.Reason = "Failed"
	}
	return c
}

// authMessage is the first line of an authentication failure and, when the
// token endpoint answered with one, its error_description.
func authMessage(err error, afe *azidentity.AuthenticationFailedError) string {
	msg := strings.TrimSpace(firstLine(err.Error()))
	if afe.RawResponse == nil {
		// No answer from Entra ID: the cause (connection refused, a DNS
		// or TLS failure) is on the lines below, keep it all on one line.
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	body, rerr := runtime.Payload(afe.RawResponse)
	if rerr != nil {
		return msg
	}
	var b struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &b) != nil || (b.Description == "" && b.Error == "") {
		return msg
	}
	if b.Description == "" {
		return msg + " " + b.Error
	}
	return msg + " " + b.Description
}

// scrub replaces secret values in an error's text. The error's identity
// (errors.Is/As) is kept when there is nothing to replace.
func scrub(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := scrubString(msg, secrets)
	if clean == msg {
		return err
	}
	var ae *azure.ARMError
	if errors.As(err, &ae) {
		c := *ae
		c.Message = scrubString(c.Message, secrets)
		c.Details = append([]azure.ARMErrorDetail(nil), ae.Details...)
		for i := range c.Details {
			c.Details[i].Message = scrubString(c.Details[i].Message, secrets)
		}
		return &c
	}
	return errors.New(clean)
}

func scrubString(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 { // shorter values would blank out ordinary words
			s = strings.ReplaceAll(s, v, "(sensitive value)")
		}
	}
	return s
}

// ReasonManagedByASO is the Ready reason of a resource gitaso refuses to
// write or delete because an ASO object in the cluster manages it.
const ReasonManagedByASO = "ManagedByASO"

// managedByASO is the failure of a resource an ASO object manages: a
// Warning, so the loop tries again once ASO lets go (reconcile-policy
// skip on the object, or the object gone).
func managedByASO(r *planner.Resource) error {
	return &statusError{reason: ReasonManagedByASO, severity: record.SeverityWarning, msg: r.ManagedByASOMessage()}
}
