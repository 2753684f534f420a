package source

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits bound what one revision may hold, so that a malformed or hostile
// commit is refused with an error naming the file and the limit instead of
// exhausting memory or CPU ("billion laughs" alias bombs, deeply nested or
// huge files, a symlink to /dev/zero). Every limit applies to every mode
// (Git and directory) and to every byte that reaches a YAML decoder: the
// files as read (before SOPS decryption, kustomize and substitution see
// them, see CheckFiles) and the rendered text ParseFile reads.
//
// A zero field takes its default (DefaultLimits); a negative field means no
// limit.
type Limits struct {
	// MaxFileSize is the size in bytes above which a *.yaml/*.yml file is
	// refused (read with a limit, so a file that grows while it is read is
	// refused too). Default 32 MiB.
	MaxFileSize int64
	// MaxTotalSize is the size in bytes of all *.yaml/*.yml files below the
	// path above which a revision is refused. Default 128 MiB.
	MaxTotalSize int64
	// MaxNodes is the number of YAML nodes (mapping keys, values and list
	// items; an alias counts as every node of what it refers to) one file
	// may hold; the render stage applies it to the files one kustomize
	// build reads, together, too. Default 4,000,000 (a file of 100,000
	// small objects fits).
	MaxNodes int64
	// MaxTotalNodes is the number of YAML nodes, counted as for MaxNodes,
	// of all files of a revision together. Default 16,000,000.
	MaxTotalNodes int64
	// MaxDepth is how deeply mappings and lists may nest (an alias counts
	// as what it refers to). Default 128.
	MaxDepth int
	// MaxKustomizeObjects is the number of documents the files a
	// kustomization reaches may hold together (kustomize's build time grows
	// with the square of it: about 100 s for 10,000 objects on a laptop
	// core). Used by the render stage. Default 10,000.
	MaxKustomizeObjects int
	// MaxTotalKustomizeObjects is the number of documents all kustomize
	// builds of a revision may read together (a base built by several
	// kustomizations counts each time): four kustomizations of 9,000
	// objects took 5 min 38 s; a revision at the limit builds in about
	// 100 s on a laptop core). Default 10,000.
	MaxTotalKustomizeObjects int
	// MaxKustomizeNodes is the number of YAML nodes (counted as for
	// MaxNodes) all kustomize builds of a revision may read together:
	// kustomize keeps up to 1,400 bytes a node, so it bounds the memory of a
	// revision's builds (default 750,000: validate peaked at 1,017 MiB at
	// the limit, see the package documentation).
	MaxKustomizeNodes int64
	// MaxRenderedSize is the size in bytes of everything the render stage
	// produces for a revision (kustomize builds and Helm releases
	// together). Default 64 MiB.
	MaxRenderedSize int64
	// MaxHelmBytes is the number of bytes one HelmRelease's templates may
	// produce in all while they run: what they write and every string,
	// list and map their functions return (a template that keeps results
	// in variables holds them). Default 256 MiB.
	MaxHelmBytes int64
	// MaxHelmSteps is the number of range iterations, template calls and
	// function calls one HelmRelease's templates may make (loops that
	// write nothing; about 5 s of rendering). Default 10,000,000.
	MaxHelmSteps int64
	// RenderTimeout is how long the render stage (kustomize, Flux
	// Kustomizations, HelmReleases, substitution) may take for one
	// revision; a revision still rendering then is refused and its
	// renders abandoned. It is wall-clock time: a revision at
	// MaxTotalKustomizeObjects (10,000 objects in one kustomization) took
	// 238 s of CPU on the 2-core test machine, so raise it on a slow or
	// busy machine. Default 5 minutes.
	RenderTimeout time.Duration
}

// DefaultLimits returns the limits used when none are set: generous for
// real repositories (Flux repositories with big Helm-rendered files, a
// few thousand ASO resources), small enough that refusing a commit takes
// well under a second and a few hundred MB.
func DefaultLimits() Limits {
	return Limits{
		MaxFileSize:         32 << 20,
		MaxTotalSize:        128 << 20,
		MaxNodes:            4_000_000,
		MaxTotalNodes:       16_000_000,
		MaxDepth:            128,
		MaxKustomizeObjects: 10_000,

		MaxTotalKustomizeObjects: 10_000,
		MaxKustomizeNodes:        750_000,
		MaxRenderedSize:          64 << 20,
		MaxHelmBytes:             256 << 20,
		MaxHelmSteps:             10_000_000,
		RenderTimeout:            5 * time.Minute,
	}
}

// WithDefaults returns l with zero fields set to their defaults and negative
// fields set to "no limit" (the largest value of their type).
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	fill64 := func(v *int64, def int64) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = math.MaxInt64
		}
	}
	fill := func(v *int, def int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = math.MaxInt
		}
	}
	fill64(&l.MaxFileSize, d.MaxFileSize)
	fill64(&l.MaxTotalSize, d.MaxTotalSize)
	fill64(&l.MaxNodes, d.MaxNodes)
	fill64(&l.MaxTotalNodes, d.MaxTotalNodes)
	fill(&l.MaxDepth, d.MaxDepth)
	fill(&l.MaxKustomizeObjects, d.MaxKustomizeObjects)
	fill(&l.MaxTotalKustomizeObjects, d.MaxTotalKustomizeObjects)
	fill64(&l.MaxKustomizeNodes, d.MaxKustomizeNodes)
	fill64(&l.MaxRenderedSize, d.MaxRenderedSize)
	fill64(&l.MaxHelmBytes, d.MaxHelmBytes)
	fill64(&l.MaxHelmSteps, d.MaxHelmSteps)
	timeout := int64(l.RenderTimeout)
	fill64(&timeout, int64(d.RenderTimeout))
	l.RenderTimeout = time.Duration(timeout)
	return l
}

// ErrLimit is wrapped by every error for an input that exceeds one of the
// Limits (see LimitError). The revision is refused; not retryable until the
// commit or the limit changes.
var ErrLimit = errors.New("input limit exceeded")

// LimitError says which limit an input exceeded. It is wrapped in a
// *diag.Error naming the file (and the line, when the limit was hit while
// reading the YAML); errors.Is(err, ErrLimit) holds.
type LimitError struct {
	// Limit is the name of the limit: one of the names SetLimit accepts,
	// e.g. "yaml-nodes".
	Limit string
	// Max is the limit's value.
	Max int64
	// What says what exceeded it, e.g. "the file expands to more than
	// 4000000 YAML nodes with its aliases".
	What string
}

// Error names what exceeded which limit and how to change it.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %v (limit %s=%s, gitaso --source-limit %s=N)", e.What, ErrLimit, e.Limit, formatLimit(e.Limit, e.Max), e.Limit)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// limitNames are the names of the limits, as SetLimit and LimitError use them.
var limitNames = []string{"file-size", "total-size", "yaml-nodes", "total-yaml-nodes", "yaml-depth", "kustomize-objects",
	"total-kustomize-objects", "kustomize-nodes", "rendered-size", "helm-bytes", "helm-steps", "render-timeout"}

// LimitNames returns the names SetLimit accepts.
func LimitNames() []string { return append([]string(nil), limitNames...) }

// SetLimit sets one limit from "NAME=VALUE" (gitaso --source-limit): NAME is
// one of LimitNames; sizes accept the suffixes KiB, MiB and GiB (and K, M,
// G as the same binary units); counts accept k and M (1000s); -1 or "none"
// removes the limit, 0 restores the default.
func (l *Limits) SetLimit(setting string) error {
	name, value, ok := strings.Cut(setting, "=")
	if !ok {
		return fmt.Errorf("source limit %q: want NAME=VALUE (NAME one of %s)", setting, strings.Join(limitNames, ", "))
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	var n int64
	var err error
	switch name {
	case "file-size", "total-size", "rendered-size", "helm-bytes":
		n, err = parseSize(value)
	case "yaml-nodes", "total-yaml-nodes", "yaml-depth", "kustomize-objects", "total-kustomize-objects", "kustomize-nodes", "helm-steps":
		n, err = parseCount(value)
	case "render-timeout":
		n, err = parseDuration(value)
	default:
		return fmt.Errorf("source limit %q: unknown limit %q (one of %s)", setting, name, strings.Join(limitNames, ", "))
	}
	if err != nil {
		return fmt.Errorf("source limit %q: %w", setting, err)
	}
	switch name {
	case "file-size":
		l.MaxFileSize = n
	case "total-size":
		l.MaxTotalSize = n
	case "yaml-nodes":
		l.MaxNodes = n
	case "total-yaml-nodes":
		l.MaxTotalNodes = n
	case "yaml-depth":
		l.MaxDepth = int(min(n, math.MaxInt32))
	case "kustomize-objects":
		l.MaxKustomizeObjects = int(min(n, math.MaxInt32))
	case "total-kustomize-objects":
		l.MaxTotalKustomizeObjects = int(min(n, math.MaxInt32))
	case "kustomize-nodes":
		l.MaxKustomizeNodes = n
	case "rendered-size":
		l.MaxRenderedSize = n
	case "helm-bytes":
		l.MaxHelmBytes = n
	case "helm-steps":
		l.MaxHelmSteps = n
	case "render-timeout":
		l.RenderTimeout = time.Duration(n)
	}
	return nil
}

// Set implements flag.Value (and pflag.Value) for gitaso --source-limit:
// one or more comma-separated NAME=VALUE settings, each as SetLimit takes
// it; a repeated flag adds to the settings before it.
func (l *Limits) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if err := l.SetLimit(part); err != nil {
			return err
		}
	}
	return nil
}

// String lists the limits that are set (not zero) as NAME=VALUE pairs.
func (l *Limits) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	add := func(name string, v int64) {
		switch {
		case v == 0:
		case v < 0:
			parts = append(parts, name+"=none")
		default:
			parts = append(parts, name+"="+formatLimit(name, v))
		}
	}
	add("file-size", l.MaxFileSize)
	add("total-size", l.MaxTotalSize)
	add("yaml-nodes", l.MaxNodes)
	add("total-yaml-nodes", l.MaxTotalNodes)
	add("yaml-depth", int64(l.MaxDepth))
	add("kustomize-objects", int64(l.MaxKustomizeObjects))
	add("total-kustomize-objects", int64(l.MaxTotalKustomizeObjects))
	add("kustomize-nodes", l.MaxKustomizeNodes)
	add("rendered-size", l.MaxRenderedSize)
	add("helm-bytes", l.MaxHelmBytes)
	add("helm-steps", l.MaxHelmSteps)
	add("render-timeout", int64(l.RenderTimeout))
	return strings.Join(parts, ",")
}

// Type names the flag's value in help (pflag.Value).
func (l *Limits) Type() string { return "NAME=VALUE" }

func parseSize(v string) (int64, error) {
	if v == "none" || v == "-1" {
		return -1, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a size such as 64MiB, 0 (default) or -1 (no limit)")
	}
	return n * mult, nil
}

func parseDuration(v string) (int64, error) {
	if v == "none" || v == "-1" {
		return -1, nil
	}
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 3m, 0 (default) or -1 (no limit)")
	}
	return int64(d), nil
}

func parseCount(v string) (int64, error) {
	if v == "none" || v == "-1" {
		return -1, nil
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "k"):
		v, mult = strings.TrimSuffix(v, "k"), 1000
	case strings.HasSuffix(v, "M"):
		v, mult = strings.TrimSuffix(v, "M"), 1000_000
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a number such as 8M, 0 (default) or -1 (no limit)")
	}
	return n * mult, nil
}

// formatLimit renders a limit's value for messages.
func formatLimit(name string, v int64) string {
	if v == math.MaxInt64 || v == math.MaxInt || v == math.MaxInt32 {
		return "none"
	}
	switch name {
	case "file-size", "total-size", "rendered-size", "helm-bytes":
		return formatSize(v)
	case "render-timeout":
		return time.Duration(v).String()
	}
	return strconv.FormatInt(v, 10)
}

// formatSize renders a byte count with a binary unit when it is exact.
func formatSize(v int64) string {
	switch {
	case v >= 1<<30 && v%(1<<30) == 0:
		return strconv.FormatInt(v>>30, 10) + "GiB"
	case v >= 1<<20 && v%(1<<20) == 0:
		return strconv.FormatInt(v>>20, 10) + "MiB"
	case v >= 1<<10 && v%(1<<10) == 0:
		return strconv.FormatInt(v>>10, 10) + "KiB"
	case v >= 1<<30:
		return strconv.FormatFloat(float64(v)/(1<<30), 'f', 1, 64) + "GiB"
	case v >= 1<<20:
		return strconv.FormatFloat(float64(v)/(1<<20), 'f', 1, 64) + "MiB"
	case v >= 1<<10:
		return strconv.FormatFloat(float64(v)/(1<<10), 'f', 1, 64) + "KiB"
	}
	return strconv.FormatInt(v, 10) + "B"
}
