package charts

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// constraint parses a version constraint as Helm and Flux do: "" and "*"
// are the latest stable version.
func constraint(c string) (*semver.Constraints, error) {
	c = strings.TrimSpace(c)
	if c == "" {
		c = "*"
	}
	cs, err := semver.NewConstraint(c)
	if err != nil {
		return nil, fmt.Errorf("%w: version %q is not a semver constraint: %v", ErrInvalid, c, err)
	}
	return cs, nil
}

// pickVersion returns the highest of versions matching the constraint c
// (an exact string match first, as helm does). Versions that are not
// semver are skipped. Pre-releases match only a constraint naming a
// pre-release (Masterminds/semver's rule, which Helm and Flux follow).
func pickVersion(versions []string, c string) (string, error) {
	cs, err := constraint(c)
	if err != nil {
		return "", err
	}
	if c = strings.TrimSpace(c); c != "" && c != "*" && slices.Contains(versions, c) {
		return c, nil
	}
	var (
		best    *semver.Version
		bestRaw string
		all     []*semver.Version
	)
	for _, raw := range versions {
		v, err := semver.NewVersion(raw)
		if err != nil {
			continue
		}
		all = append(all, v)
		if cs.Check(v) && (best == nil || v.GreaterThan(best)) {
			best, bestRaw = v, raw
		}
	}
	if best == nil {
		return "", fmt.Errorf("%w: no version matches (available: %s)", ErrNotFound, available(all))
	}
	return bestRaw, nil
}

// available lists the highest versions for an error message.
func available(vs []*semver.Version) string {
	if len(vs) == 0 {
		return "none"
	}
	slices.SortFunc(vs, func(a, b *semver.Version) int { return a.Compare(b) })
	vs = slices.CompactFunc(vs, func(a, b *semver.Version) bool { return a.Equal(b) && a.Original() == b.Original() })
	var out []string
	more := 0
	if len(vs) > 12 {
		more = len(vs) - 12
		vs = vs[len(vs)-12:]
	}
	for _, v := range vs {
		out = append(out, v.Original())
	}
	s := strings.Join(out, ", ")
	if more > 0 {
		s = fmt.Sprintf("%d older, %s", more, s)
	}
	return s
}

// isExactVersion reports whether v is one version rather than a range (Flux
// then pulls that tag from an OCI registry without listing tags).
func isExactVersion(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || v == "*" {
		return false
	}
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err == nil
}
