package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Resource Graph subset: POST /providers/Microsoft.ResourceGraph/resources with a KQL query of the shapes a drift
// check needs:
//
//	Resources | where subscriptionId == '…' and resourceGroup =~ '…' | where type =~ '…'
//	| where id in~ ('…', '…') | project id, name, type, properties | order by id asc | limit 10
//
// Tables: Resources, ResourceContainers (resource groups) and AuthorizationResources (role assignments and custom
// role definitions, at every scope; rows of the same shape, type lower-cased). Operators: ==, =~, !=, !~, in, in~, !in, !in~,
// contains, !contains, startswith, endswith, has; conditions joined by "and" or "or" (left to right, "and" binds
// tighter). Stages: where, project (with "alias = path"), order/sort by, limit/take. Rows are objectArray. Pages hold
// at most 1,000 rows and continue with $skipToken; only rows the caller may read are returned.

const graphPageSize = 1000

type graphRequest struct {
	Subscriptions []string `json:"subscriptions"`
	Query         string   `json:"query"`
	Options       struct {
		Top          *int   `json:"$top"`
		Skip         *int   `json:"$skip"`
		SkipToken    string `json:"$skipToken"`
		ResultFormat string `json:"resultFormat"`
	} `json:"options"`
}

func graphError(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"code":    "BadRequest",
		"message": "Please provide below info when asking for support: timestamp = " + armTime(nowUTC()) + ", correlationId = " + newUUID() + ".",
		"details": []any{
			map[string]any{"code": "InvalidQuery", "message": "Query is invalid. Please refer to the documentation for the Azure Resource Graph service and fix the error before retrying."},
			map[string]any{"code": "ParserFailure", "message": msg},
		},
	}})
}

func (e *Emulator) serveGraph(w http.ResponseWriter, r *http.Request, c *accessClaims, info *reqInfo) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var req graphRequest
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		info.code = "InvalidRequestContent"
		writeARMError(w, http.StatusBadRequest, info.code, "The request content was invalid and could not be deserialized: "+err.Error())
		return
	}
	q, err := parseKQL(req.Query)
	if err != nil {
		info.code = "BadRequest"
		graphError(w, err.Error())
		return
	}
	subs := map[string]bool{}
	for _, s := range req.Subscriptions {
		subs[strings.ToLower(s)] = true
	}
	oid := strings.ToLower(c.Oid)
	e.mu.RLock()
	var rows []*graphRow
	var cands []*resource
	switch q.table {
	case "resourcecontainers":
		cands = e.store.ofType(rgTypeKey, "")
	case "authorizationresources":
		cands = append(e.store.ofType(raTypeKey, ""), e.store.ofType(roleDefTypeKey, "")...)
	default:
		for _, x := range e.store.all() {
			// Role assignments and definitions live in AuthorizationResources, not Resources.
			if x.subKey != "" && listedAsResource(x) {
				cands = append(cands, x)
			}
		}
	}
	for _, x := range cands {
		if len(subs) > 0 && !subs[x.subKey] {
			continue
		}
		if !e.rbac.allowed(oid, strings.ToLower(actionFor(x.Type, "read")), x.key) {
			continue
		}
		row := &graphRow{res: x, tenant: e.tenantID}
		ok, err := q.match(row)
		if err != nil {
			e.mu.RUnlock()
			graphError(w, err.Error())
			return
		}
		if ok {
			rows = append(rows, row)
		}
	}
	e.mu.RUnlock()
	if q.orderBy != "" {
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := fmt.Sprint(rows[i].get(q.orderBy)), fmt.Sprint(rows[j].get(q.orderBy))
			if q.desc {
				return a > b
			}
			return a < b
		})
	}
	if q.limit >= 0 && len(rows) > q.limit {
		rows = rows[:q.limit]
	}
	total := len(rows)
	skip := 0
	if req.Options.Skip != nil {
		skip = *req.Options.Skip
	}
	if req.Options.SkipToken != "" {
		n, err := strconv.Atoi(req.Options.SkipToken)
		if err != nil || n < 0 {
			info.code = "BadRequest"
			graphError(w, "invalid $skipToken")
			return
		}
		skip = n
	}
	top := graphPageSize
	if req.Options.Top != nil && *req.Options.Top > 0 && *req.Options.Top < top {
		top = *req.Options.Top
	}
	skip = min(max(skip, 0), total)
	end := min(skip+top, total)
	data := make([]any, 0, end-skip)
	for _, row := range rows[skip:end] {
		data = append(data, q.project(row))
	}
	out := map[string]any{"totalRecords": total, "count": len(data), "data": data, "facets": []any{}, "resultTruncated": "false"}
	if end < total && (req.Options.Top == nil || req.Options.SkipToken != "" || *req.Options.Top >= graphPageSize) {
		out["$skipToken"] = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, out)
}

// graphRow is a Resource Graph row, decoded lazily: index fields answer without decoding the body.
type graphRow struct {
	res    *resource
	tenant string
	body   map[string]any
	full   map[string]any
}

func (g *graphRow) decoded() map[string]any {
	if g.body == nil {
		g.body, _ = g.res.decode()
		if g.body == nil {
			g.body = map[string]any{}
		}
	}
	return g.body
}

func (g *graphRow) get(path string) any {
	parts := splitGraphPath(path)
	if len(parts) == 0 {
		return nil
	}
	head := strings.ToLower(parts[0])
	var v any
	switch head {
	case "id":
		v = g.res.ID
	case "name":
		v = g.res.Name
	case "type":
		v = g.res.typeKey
	case "resourcegroup":
		v = g.res.rgKey
	case "subscriptionid":
		v = g.res.subKey
	case "location":
		v = strings.ToLower(g.res.Location)
	case "tenantid":
		v = g.tenant
	default:
		v = g.row()[parts[0]]
		if v == nil {
			for k, x := range g.row() {
				if strings.EqualFold(k, parts[0]) {
					v = x
				}
			}
		}
	}
	for _, p := range parts[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func (g *graphRow) row() map[string]any {
	if g.full != nil {
		return g.full
	}
	b := g.decoded()
	out := map[string]any{
		"id": g.res.ID, "name": g.res.Name, "type": g.res.typeKey, "tenantId": g.tenant,
		"kind": strOr(b["kind"]), "location": strings.ToLower(g.res.Location), "resourceGroup": g.res.rgKey,
		"subscriptionId": g.res.subKey, "managedBy": strOr(b["managedBy"]), "sku": b["sku"], "plan": b["plan"],
		"properties": b["properties"], "tags": b["tags"], "identity": b["identity"], "zones": b["zones"],
		"extendedLocation": b["extendedLocation"],
	}
	g.full = out
	return out
}

func strOr(v any) string {
	s, _ := v.(string)
	return s
}

// splitGraphPath splits "properties.a['b'].c" into [properties a b c]; tostring(x) is unwrapped.
func splitGraphPath(p string) []string {
	p = strings.TrimSpace(p)
	for _, fn := range []string{"tostring(", "tolower(", "toupper("} {
		if strings.HasPrefix(strings.ToLower(p), fn) && strings.HasSuffix(p, ")") {
			p = p[len(fn) : len(p)-1]
		}
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '.':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		case '[':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return append(out, p[i:])
			}
			out = append(out, strings.Trim(p[i+1:i+j], `'"`))
			i += j
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// KQL subset

type kqlCond struct {
	field string
	op    string
	vals  []string
}

type kqlWhere struct {
	// disjunction of conjunctions
	any [][]kqlCond
}

type kqlProject struct {
	alias, path string
}

type kqlQuery struct {
	table   string
	wheres  []kqlWhere
	cols    []kqlProject
	orderBy string
	desc    bool
	limit   int
}

type kqlTok struct {
	kind byte // 'w' word, 's' string, 'p' punctuation/operator
	text string
}

func lexKQL(s string) ([]kqlTok, error) {
	var toks []kqlTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string literal at %d", i)
			}
			toks = append(toks, kqlTok{'s', b.String()})
			i = j + 1
		case c == '(' || c == ')' || c == ',' || c == '|':
			toks = append(toks, kqlTok{'p', string(c)})
			i++
		case c == '=' || c == '!' || c == '<' || c == '>':
			if c == '!' && i+1 < len(s) && isWordByte(s[i+1]) {
				j := i + 1
				for j < len(s) && (isWordByte(s[j]) || s[j] == '~') {
					j++
				}
				toks = append(toks, kqlTok{'w', s[i:j]})
				i = j
				continue
			}
			j := i + 1
			for j < len(s) && (s[j] == '=' || s[j] == '~') {
				j++
			}
			toks = append(toks, kqlTok{'p', s[i:j]})
			i = j
		case isWordByte(c) || c == '[':
			j := i
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.' || s[j] == '[' || s[j] == '~' || s[j] == '-') {
				if s[j] == '[' {
					k := strings.IndexByte(s[j:], ']')
					if k < 0 {
						return nil, fmt.Errorf("unterminated [ at %d", j)
					}
					j += k + 1
					continue
				}
				j++
			}
			// function call like tostring(x): keep as one word
			if j < len(s) && s[j] == '(' {
				w := strings.ToLower(s[i:j])
				if w == "tostring" || w == "tolower" || w == "toupper" {
					k := strings.IndexByte(s[j:], ')')
					if k < 0 {
						return nil, fmt.Errorf("unterminated call at %d", i)
					}
					j += k + 1
				}
			}
			toks = append(toks, kqlTok{'w', s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q at %d", c, i)
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func parseKQL(s string) (*kqlQuery, error) {
	toks, err := lexKQL(s)
	if err != nil {
		return nil, err
	}
	var stages [][]kqlTok
	cur := []kqlTok{}
	for _, t := range toks {
		if t.kind == 'p' && t.text == "|" {
			stages = append(stages, cur)
			cur = []kqlTok{}
			continue
		}
		cur = append(cur, t)
	}
	stages = append(stages, cur)
	if len(stages[0]) != 1 || stages[0][0].kind != 'w' {
		return nil, fmt.Errorf("query must start with a table name (Resources, ResourceContainers or AuthorizationResources)")
	}
	q := &kqlQuery{table: strings.ToLower(stages[0][0].text), limit: -1}
	if q.table != "resources" && q.table != "resourcecontainers" && q.table != "authorizationresources" {
		return nil, fmt.Errorf("unsupported table %q", stages[0][0].text)
	}
	for _, st := range stages[1:] {
		if len(st) == 0 {
			return nil, fmt.Errorf("empty pipeline stage")
		}
		switch kw := strings.ToLower(st[0].text); kw {
		case "where":
			w, err := parseWhere(st[1:])
			if err != nil {
				return nil, err
			}
			q.wheres = append(q.wheres, w)
		case "project":
			q.cols = nil
			rest := st[1:]
			for len(rest) > 0 {
				if rest[0].kind != 'w' {
					return nil, fmt.Errorf("project: unexpected %q", rest[0].text)
				}
				pr := kqlProject{alias: rest[0].text, path: rest[0].text}
				rest = rest[1:]
				if len(rest) >= 2 && rest[0].text == "=" && rest[1].kind == 'w' {
					pr.path = rest[1].text
					rest = rest[2:]
				}
				if p := splitGraphPath(pr.alias); len(p) > 0 && pr.alias == pr.path {
					pr.alias = p[len(p)-1]
				}
				q.cols = append(q.cols, pr)
				if len(rest) > 0 {
					if rest[0].text != "," {
						return nil, fmt.Errorf("project: expected ',' got %q", rest[0].text)
					}
					rest = rest[1:]
				}
			}
		case "order", "sort":
			if len(st) < 3 || !strings.EqualFold(st[1].text, "by") {
				return nil, fmt.Errorf("%s: expected 'by'", kw)
			}
			q.orderBy = st[2].text
			q.desc = len(st) < 4 || !strings.EqualFold(st[3].text, "asc") // KQL sorts descending by default
		case "limit", "take":
			if len(st) != 2 {
				return nil, fmt.Errorf("%s: expected a number", kw)
			}
			n, err := strconv.Atoi(st[1].text)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s: invalid number %q", kw, st[1].text)
			}
			q.limit = n
		default:
			return nil, fmt.Errorf("unsupported operator %q", st[0].text)
		}
	}
	return q, nil
}

func parseWhere(toks []kqlTok) (kqlWhere, error) {
	var w kqlWhere
	var conj []kqlCond
	for len(toks) > 0 {
		if len(toks) < 3 || toks[0].kind != 'w' {
			return w, fmt.Errorf("where: expected 'field operator value'")
		}
		c := kqlCond{field: toks[0].text, op: strings.ToLower(toks[1].text)}
		toks = toks[2:]
		switch c.op {
		case "in", "in~", "!in", "!in~":
			if toks[0].text != "(" {
				return w, fmt.Errorf("where: expected '(' after %s", c.op)
			}
			toks = toks[1:]
			for {
				if len(toks) == 0 {
					return w, fmt.Errorf("where: unterminated list")
				}
				if toks[0].text == ")" && toks[0].kind == 'p' {
					toks = toks[1:]
					break
				}
				if toks[0].text == "," && toks[0].kind == 'p' {
					toks = toks[1:]
					continue
				}
				c.vals = append(c.vals, toks[0].text)
				toks = toks[1:]
			}
		case "==", "=~", "!=", "!~", "contains", "!contains", "startswith", "endswith", "has", "contains_cs":
			c.vals = []string{toks[0].text}
			toks = toks[1:]
		default:
			return w, fmt.Errorf("where: unsupported operator %q", c.op)
		}
		conj = append(conj, c)
		if len(toks) == 0 {
			break
		}
		switch strings.ToLower(toks[0].text) {
		case "and":
		case "or":
			w.any = append(w.any, conj)
			conj = nil
		default:
			return w, fmt.Errorf("where: expected 'and' or 'or', got %q", toks[0].text)
		}
		toks = toks[1:]
	}
	w.any = append(w.any, conj)
	return w, nil
}

func valueString(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

func (c kqlCond) eval(row *graphRow) bool {
	v := valueString(row.get(c.field))
	lv := strings.ToLower(v)
	switch c.op {
	case "==":
		return v == c.vals[0]
	case "=~":
		return lv == strings.ToLower(c.vals[0])
	case "!=":
		return v != c.vals[0]
	case "!~":
		return lv != strings.ToLower(c.vals[0])
	case "contains", "has":
		return strings.Contains(lv, strings.ToLower(c.vals[0]))
	case "contains_cs":
		return strings.Contains(v, c.vals[0])
	case "!contains":
		return !strings.Contains(lv, strings.ToLower(c.vals[0]))
	case "startswith":
		return strings.HasPrefix(lv, strings.ToLower(c.vals[0]))
	case "endswith":
		return strings.HasSuffix(lv, strings.ToLower(c.vals[0]))
	case "in", "in~", "!in", "!in~":
		ci := strings.HasSuffix(c.op, "~")
		found := false
		for _, x := range c.vals {
			if (ci && strings.EqualFold(x, v)) || (!ci && x == v) {
				found = true
				break
			}
		}
		return found != strings.HasPrefix(c.op, "!")
	}
	return false
}

func (q *kqlQuery) match(row *graphRow) (bool, error) {
	for _, w := range q.wheres {
		ok := false
		for _, conj := range w.any {
			all := true
			for _, c := range conj {
				if !c.eval(row) {
					all = false
					break
				}
			}
			if all {
				ok = true
				break
			}
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func (q *kqlQuery) project(row *graphRow) map[string]any {
	if len(q.cols) == 0 {
		return row.row()
	}
	out := make(map[string]any, len(q.cols))
	for _, p := range q.cols {
		out[p.alias] = row.get(p.path)
	}
	return out
}
