package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The Activity Log: Azure's record of the control-plane writes (PUT, PATCH,
// DELETE, POST actions) of a subscription, kept 90 days. reconcile reads it
// to learn what may have drifted since it last read Azure, instead of
// reading every resource each sync period. Events reach the log minutes
// after the write (Azure documents an ingestion delay), so the caller
// queries from its last check minus an overlap.

// ActivityLogAPIVersion is the api-version ActivityLog uses.
const ActivityLogAPIVersion = "2015-04-01"

// activityLogSelect are the fields ActivityLog asks for ($select).
const activityLogSelect = "resourceId,operationName,eventTimestamp,status,caller"

// ActivityEvent is one Activity Log event, reduced to what drift detection
// needs.
type ActivityEvent struct {
	ResourceID string
	// Operation is the ARM operation, e.g.
	// "Microsoft.ServiceBus/namespaces/queues/write" or ".../listKeys/action".
	Operation string
	Time      time.Time
	// Status is Started, Accepted, Succeeded or Failed.
	Status string
	// Caller is who made the write: a UPN, or a principal's object ID.
	Caller string
}

// Changes reports whether the event may have changed its resource (or, for
// a parent, its children): writes, deletes and actions, except list actions
// (listKeys, listConnectionStrings, …), which only read.
func (e ActivityEvent) Changes() bool {
	op := strings.ToLower(e.Operation)
	if strings.HasSuffix(op, "/read") {
		return false
	}
	if verb, ok := strings.CutSuffix(op, "/action"); ok {
		verb = verb[strings.LastIndexByte(verb, '/')+1:]
		return !strings.HasPrefix(verb, "list")
	}
	return true
}

// ActivityLog returns the events of subscription sub between from and to
// (inclusive), every page followed (nextLink). A principal without
// Microsoft.Insights/eventtypes/values/read gets an *ARMError with status
// 403.
func (c *Client) ActivityLog(ctx context.Context, sub string, from, to time.Time) ([]ActivityEvent, error) {
	if sub == "" {
		return nil, fmt.Errorf("activity log: subscription is required")
	}
	u, err := c.requestURL("/subscriptions/"+url.PathEscape(sub)+"/providers/Microsoft.Insights/eventtypes/management/values", ActivityLogAPIVersion)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("activity log of %s: %w", sub, err)
	}
	q := pu.Query()
	q.Set("$filter", fmt.Sprintf("eventTimestamp ge '%s' and eventTimestamp le '%s'",
		from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano)))
	q.Set("$select", activityLogSelect)
	pu.RawQuery = q.Encode()
	next := pu.String()
	var out []ActivityEvent
	for page := 1; next != ""; page++ {
		if page > 10000 {
			return nil, fmt.Errorf("activity log of %s: too many pages", sub)
		}
		resp, body, err := c.send(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			e := newARMError(resp, body)
			e.Method, e.Path = http.MethodGet, pu.Path
			return nil, e
		}
		var p struct {
			Value []struct {
				ResourceID     string                 `json:"resourceId"`
				OperationName  struct{ Value string } `json:"operationName"`
				EventTimestamp time.Time              `json:"eventTimestamp"`
				Status         struct{ Value string } `json:"status"`
				Caller         string                 `json:"caller"`
			} `json:"value"`
			NextLink string `json:"nextLink"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("activity log of %s: decoding page %d: %w", sub, page, err)
		}
		for _, v := range p.Value {
			out = append(out, ActivityEvent{ResourceID: v.ResourceID, Operation: v.OperationName.Value,
				Time: v.EventTimestamp, Status: v.Status.Value, Caller: v.Caller})
		}
		if p.NextLink == next {
			break
		}
		next = p.NextLink
	}
	return out, nil
}

// Principal returns the names the Activity Log may give cred as a caller
// (the object ID, application ID and UPN of its token), read from an ARM
// token of that credential. The token is not verified: it is our own.
func (cs *Clients) Principal(ctx context.Context, cred *Credential) ([]string, error) {
	tc, err := cs.TokenCredential(cred)
	if err != nil {
		return nil, err
	}
	scope := strings.TrimRight(cs.cloud.Audience, "/") + "/.default"
	tok, err := tc.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{scope}})
	if err != nil {
		return nil, fmt.Errorf("principal of %s: %w", cred.Source, err)
	}
	parts := strings.Split(tok.Token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("principal of %s: the token is not a JWT", cred.Source)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, fmt.Errorf("principal of %s: token claims: %w", cred.Source, err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil, fmt.Errorf("principal of %s: token claims: %w", cred.Source, err)
	}
	var names []string
	for _, k := range []string{"oid", "appid", "azp", "upn", "unique_name"} {
		if s, _ := claims[k].(string); s != "" {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("principal of %s: the token names no principal", cred.Source)
	}
	return names, nil
}
