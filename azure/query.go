package azure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// ResourceGraphAPIVersion is the Resource Graph api-version Query uses.
const ResourceGraphAPIVersion = "2021-03-01"

// queryPageSize is Resource Graph's largest page.
const queryPageSize = 1000

// Query runs a Resource Graph (KQL) query over subscriptions and returns every
// row of every page (following $skipToken) as JSON-compatible values:
// integers are int64, other numbers float64.
func (c *Client) Query(ctx context.Context, query string, subscriptions []string) ([]map[string]any, error) {
	u, err := c.requestURL("/providers/Microsoft.ResourceGraph/resources", ResourceGraphAPIVersion)
	if err != nil {
		return nil, err
	}
	type options struct {
		Top          int    `json:"$top"`
		SkipToken    string `json:"$skipToken,omitempty"`
		ResultFormat string `json:"resultFormat"`
	}
	type request struct {
		Subscriptions []string `json:"subscriptions"`
		Query         string   `json:"query"`
		Options       options  `json:"options"`
	}
	if subscriptions == nil {
		subscriptions = []string{}
	}
	var rows []map[string]any
	skip := ""
	for page := 0; ; page++ {
		if page > 100000 {
			return nil, fmt.Errorf("resource graph query: too many pages")
		}
		body, err := json.Marshal(request{Subscriptions: subscriptions, Query: query,
			Options: options{Top: queryPageSize, SkipToken: skip, ResultFormat: "objectArray"}})
		if err != nil {
			return nil, err
		}
		resp, rbody, err := c.send(ctx, http.MethodPost, u, body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, newARMError(resp, rbody)
		}
		var p struct {
			Data      []map[string]any `json:"data"`
			SkipToken string           `json:"$skipToken"`
		}
		dec := json.NewDecoder(bytes.NewReader(rbody))
		dec.UseNumber()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("resource graph query: decoding page %d: %w", page+1, err)
		}
		for _, r := range p.Data {
			rows = append(rows, normalizeNumbers(r).(map[string]any))
		}
		if p.SkipToken == "" || p.SkipToken == skip {
			return rows, nil
		}
		skip = p.SkipToken
	}
}

// normalizeNumbers converts json.Number to int64 when integral, else float64.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	default:
		return v
	}
}
