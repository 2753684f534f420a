package forge

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gitaso/gitaso/planner"
)

// DefaultMarker names gitaso's sticky plan comment when Options.Marker is
// empty.
const DefaultMarker = "gitaso-plan"

// DefaultContext names gitaso's commit status.
const DefaultContext = "gitaso/plan"

// Limit returns the largest comment body kind accepts, in characters.
// Comment measures parts in bytes of UTF-8, never more than characters, so
// a part within the limit always fits. Unknown kinds get GitHub's limit,
// the smallest.
func Limit(kind string) int {
	switch kind {
	case "gitlab":
		// GitLab: "body (required) - The content of a note. Limited to
		// 1,000,000 characters." https://docs.gitlab.com/api/notes/#create-new-merge-request-note
		// (the server answers 400 "Note is too long (maximum is 1000000 characters)").
		return 1_000_000
	case "azuredevops":
		// Azure DevOps documents no limit; Services and Server answer 400 "A
		// discussion comment cannot be longer than 150000 characters.
		// Parameter name: comment.Content" (runatlantis/atlantis#1585,
		// jfrog/frogbot#446).
		return 150_000
	case "gitea", "forgejo":
		// Gitea documents no limit (the column is LONGTEXT,
		// models/issues/comment.go); GitHub's keeps each part readable.
		return 65_536
	}
	// GitHub (github.com and Enterprise Server): 422 "body is too long
	// (maximum is 65536 characters)" on POST /repos/{owner}/{repo}/issues/{n}/comments
	// (https://docs.github.com/rest/issues/comments#create-an-issue-comment;
	// the limit is in the error, not the OpenAPI description).
	return 65_536
}

// minLimit is the smallest limit Comment splits to; a smaller one is raised.
const minLimit = 2048

// markerLine is the hidden first line of part i of n.
func markerLine(marker string, i, n int) string {
	return fmt.Sprintf("<!-- %s part %d/%d -->", marker, i, n)
}

// parseMarker finds the hidden marker line of marker in body and returns
// its part number and count.
func parseMarker(body, marker string) (part, count int, ok bool) {
	prefix := "<!-- " + marker + " part "
	i := strings.Index(body, prefix)
	if i < 0 {
		return 0, 0, false
	}
	rest := body[i+len(prefix):]
	end := strings.Index(rest, " -->")
	if end < 0 {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest[:end], "/")
	if !found {
		return 0, 0, false
	}
	part, err1 := strconv.Atoi(a)
	count, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || part < 1 {
		return 0, 0, false
	}
	return part, count, true
}

// withMarker makes body carry the marker line of part i of n: it replaces
// another marker line of the same marker or puts one first.
func withMarker(body, marker string, i, n int) string {
	want := markerLine(marker, i, n)
	prefix := "<!-- " + marker + " part "
	if j := strings.Index(body, prefix); j >= 0 {
		if end := strings.Index(body[j:], " -->"); end >= 0 {
			return body[:j] + want + body[j+end+len(" -->"):]
		}
	}
	return want + "\n" + body
}

// outdatedTag marks a comment MarkOutdated edited, so it is edited once.
const outdatedTag = "<!-- gitaso-outdated -->"

// outdatedReserve is the room Comment leaves in each part for the notice
// MarkOutdated adds.
const outdatedReserve = 512

// outdated returns body with a notice that it is outdated below its marker
// line, and whether it changed.
func outdated(body, reason string) (string, bool) {
	if strings.Contains(body, outdatedTag) {
		return body, false
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		reason = "the pull request was closed"
	}
	notice := outdatedTag + "\n> [!CAUTION]\n> **Outdated:** " + truncate(reason, 300) + ". This plan is no longer current.\n\n"
	line, rest, found := strings.Cut(body, "\n")
	if !found || !strings.HasPrefix(line, "<!-- ") {
		return notice + body, true
	}
	return line + "\n" + notice + rest, true
}

// Comment renders a plan as a pull-request comment of one or more parts of
// at most limit bytes each (Limit of the forge; ≤ 0: GitHub's), the summary
// first. Each part starts with the hidden marker line ("<!-- marker part
// i/n -->") and, when there are several, a visible "part i/n" line. The
// text is planner.RenderMarkdown's: the summary table, then the full plan
// in a collapsed <details> block; a part never ends inside a code block, a
// <details> block or a table without closing it, and the next part opens
// them again. Secret values are already redacted in every plan.
//
// With refused set, the comment says the revision is refused and lists its
// errors (the plan, when there is one, only names the revision).
func Comment(p *planner.Plan, refused error, limit int, marker string) []string {
	if limit <= 0 {
		limit = Limit("github")
	}
	limit = max(limit, minLimit)
	if marker == "" {
		marker = DefaultMarker
	}
	var md bytes.Buffer
	if refused != nil {
		refusedMarkdown(&md, p, refused)
	} else if p == nil {
		md.WriteString("### gitaso plan\n\nNo plan.\n")
	} else if err := planner.RenderMarkdown(&md, p); err != nil {
		md.Reset()
		fmt.Fprintf(&md, "### gitaso plan\n\nThe plan could not be rendered: %v\n", err)
	}
	// The header of each part: the marker line and "part i/n"; the widest
	// it can be is reserved, with room for the outdated notice.
	header := len(markerLine(marker, 99999, 99999)) + len(partLine(99999, 99999)) + 2
	chunks := split(md.String(), limit-header-outdatedReserve)
	parts := make([]string, len(chunks))
	for i, c := range chunks {
		h := markerLine(marker, i+1, len(chunks)) + "\n"
		if len(chunks) > 1 {
			h += partLine(i+1, len(chunks)) + "\n"
		}
		parts[i] = h + c
	}
	return parts
}

func partLine(i, n int) string {
	if i == 1 {
		return fmt.Sprintf("<sub>part %d/%d: the plan continues in the next comment</sub>\n", i, n)
	}
	return fmt.Sprintf("<sub>gitaso plan, part %d/%d</sub>\n", i, n)
}

// refusedMarkdown writes the comment of a refused revision: what it means
// and the errors, in a code block.
func refusedMarkdown(w *bytes.Buffer, p *planner.Plan, refused error) {
	rev := ""
	if p != nil && p.Revision != "" {
		rev = " for `" + planner.ShortRevision(p.Revision) + "`"
	}
	lines := errorLines(refused)
	fmt.Fprintf(w, "### gitaso plan%s: revision refused\n\n", rev)
	fmt.Fprintf(w, "> [!CAUTION]\n> **%d error(s).** Nothing of this revision will be applied; the last good revision stays in force.\n\n", len(lines))
	w.WriteString("```text\n")
	for _, l := range lines {
		w.WriteString(strings.ReplaceAll(l, "```", "'''") + "\n")
	}
	w.WriteString("```\n")
}

// errorLines are the non-empty lines of err.
func errorLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		out = []string{"refused (no message)"}
	}
	return out
}

// StatusOf is the commit status of a plan: success with its summary line
// ("3 to create, 1 to delete"); failure for a plan held by the deletion
// guard (nothing of it is applied until its deletions are approved) and for
// a refused revision, with its first error. Descriptions are at most 140
// characters (GitHub's limit).
func StatusOf(p *planner.Plan, refused error) Status {
	s := Status{State: StateSuccess, Context: DefaultContext}
	switch {
	case refused != nil:
		lines := errorLines(refused)
		s.State = StateFailure
		s.Description = "refused: " + strings.TrimSpace(lines[0])
		if len(lines) > 1 {
			s.Description = fmt.Sprintf("refused, %d errors: %s", len(lines), strings.TrimSpace(lines[0]))
		}
	case p == nil:
		s.State, s.Description = StateError, "no plan"
	default:
		s.Description = planner.SummaryLine(p)
		if p.Held != nil || p.Partial() {
			// A held plan, or one whose Flux units fail to render: the
			// pull request would break a team, so its status is red.
			s.State = StateFailure
		}
	}
	s.Description = truncate(s.Description, 140)
	return s
}

// split cuts markdown into chunks of at most budget bytes at line ends. A
// chunk that ends inside a code fence, a <details> block or a table closes
// them and the next chunk opens them again (the table with its header).
func split(md string, budget int) []string {
	const closeReserve = len("```\n") + len("\n</details>\n")
	var (
		chunks  []string
		cur     strings.Builder
		fence   string // the open fence's line, e.g. "```diff"
		details string // the open <details> line
		table   []string
		reopen  int // bytes of cur written by reopening
	)
	flush := func() {
		if fence != "" {
			cur.WriteString("```\n")
		}
		if details != "" {
			cur.WriteString("\n</details>\n")
		}
		chunks = append(chunks, cur.String())
		cur.Reset()
		if details != "" {
			cur.WriteString(strings.Replace(details, "</summary>", " (continued)</summary>", 1) + "\n\n")
		}
		if fence != "" {
			cur.WriteString(fence + "\n")
		} else if len(table) == 2 {
			cur.WriteString(table[0] + "\n" + table[1] + "\n")
		}
		reopen = cur.Len()
	}
	lines := strings.SplitAfter(md, "\n")
	for _, line := range lines {
		if line == "" {
			continue
		}
		// A line too long for any chunk is cut at rune boundaries.
		first := true
		for len(line) > 0 {
			room := budget - closeReserve - cur.Len()
			if len(line) > room && cur.Len() > reopen {
				flush()
				continue
			}
			piece := line
			if len(piece) > room {
				piece = cutRunes(line, max(room, 1))
			}
			cur.WriteString(piece)
			if first {
				track(line, &fence, &details, &table)
				first = false
			}
			line = line[len(piece):]
			if line != "" {
				cur.WriteString("\n")
				flush()
			}
		}
	}
	if cur.Len() > reopen || len(chunks) == 0 {
		chunks = append(chunks, cur.String())
	}
	return chunks
}

// track follows the block structure a line opens or closes.
func track(line string, fence, details *string, table *[]string) {
	t := strings.TrimRight(line, "\n")
	trim := strings.TrimSpace(t)
	switch {
	case strings.HasPrefix(trim, "```"):
		if *fence == "" {
			*fence = t
		} else {
			*fence = ""
		}
		*table = nil
		return
	case *fence != "":
		return
	case strings.HasPrefix(trim, "<details"):
		*details = t
	case strings.HasPrefix(trim, "</details>"):
		*details = ""
	}
	if strings.HasPrefix(trim, "|") {
		if len(*table) < 2 {
			*table = append(*table, t)
		}
	} else {
		*table = nil
	}
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on
// a rune boundary (at least one rune).
func cutRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		_, size := utf8.DecodeRuneInString(s)
		return s[:size]
	}
	return s[:i]
}
