package anchor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("anchor: %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	return nil
}

// WriteMarkdown renders results as the tables of docs/aso-anchor.md.
func WriteMarkdown(w io.Writer, results []*Result) error {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "### %s\n\n%s. %d objects, %d ASO resources; parallelism %d; emulator latency %s; ARM throttling on.\n\n",
			r.Workload, r.Note, r.Objects, r.ASOObjects, r.Parallelism, r.Latency)
		fmt.Fprintf(&b, "| side | all Ready | seconds | ARM requests | throttled (429) | CPU s | peak RSS MiB (sum) | processes |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range []*Side{r.ASO, r.Gitaso} {
			if s == nil {
				continue
			}
			var procs []string
			for _, p := range s.Processes {
				procs = append(procs, fmt.Sprintf("%s %.1f s / %.0f MiB", p.Name, p.CPUSeconds, p.PeakRSSMiB))
			}
			ready := "yes"
			switch {
			case s.Error != "":
				ready = "error"
			case !s.Ready:
				ready = fmt.Sprintf("no (%d not)", len(s.NotReady))
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %d | %d | %.1f | %.0f | %s |\n", s.Name, ready, s.Seconds, s.Requests, s.Throttled,
				s.CPUSeconds, s.PeakRSSMiB, strings.Join(procs, "; "))
		}
		b.WriteString("\nARM requests by operation (method, type, status):\n\n")
		for _, s := range []*Side{r.ASO, r.Gitaso} {
			if s == nil {
				continue
			}
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, ops(s.ByOperation))
			if s.Idle != nil {
				fmt.Fprintf(&b, "  - idle over %.0f s (one sync period + 10%%): %d requests: %s\n", s.Idle.Seconds, s.Idle.Requests, ops(s.Idle.ByOperation))
			}
			if s.Restart != nil {
				fmt.Fprintf(&b, "  - restart: %d requests until ARM was quiet for 10 s, last one after %.1f s: %s\n", s.Restart.Requests, s.Restart.Seconds, ops(s.Restart.ByOperation))
			}
			if s.Error != "" {
				fmt.Fprintf(&b, "  - error: %s\n", s.Error)
			}
			for _, n := range first(s.NotReady, 10) {
				fmt.Fprintf(&b, "  - not Ready: %s\n", n)
			}
		}
		if o := r.Oracle; o != nil {
			fmt.Fprintf(&b, "\nOracle: last accepted PUT bodies equal for %d of %d resources; final bodies equal for %d of %d.\n\n",
				o.PUTMatched, o.PUTResources, o.FinalMatched, o.FinalResources)
			fmt.Fprintf(&b, "- ARM types that matched throughout: %s\n- ARM types with a difference: %s\n", strings.Join(o.MatchedTypes, ", "), strings.Join(o.MismatchedTypes, ", "))
			if len(o.Diffs) > 0 {
				b.WriteString("\n| resource | what | field | ASO | gitaso |\n|---|---|---|---|---|\n")
				for i, d := range o.Diffs {
					if i == 200 {
						fmt.Fprintf(&b, "| … %d more in result.json | | | | |\n", len(o.Diffs)-200)
						break
					}
					fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", d.Resource, d.What, d.Field, cell(d.ASO), cell(d.Gitaso))
				}
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ops(m map[string]int64) string {
	var parts []string
	for _, k := range SortedOps(m) {
		if strings.HasPrefix(k, "GET metadata") {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func cell(s string) string { return "`" + strings.ReplaceAll(s, "|", "\\|") + "`" }
