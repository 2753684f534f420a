// Command gen builds the catalog that package aso embeds
// (aso/catalog/catalog.json.gz and packages.bin) from the ASO conversion
// facts: read from ASO's source tree by package asosrc (-aso-src), or from a
// directory of facts files in the layout of ../shared/aso-schema (-schema).
//
// Usage (from the repository root; docs/aso-upgrade.md):
//
//	go run ./aso/gen -aso-src <ASO git dir> -aso-ref <commit or tag>   # make aso-catalog ASO_SRC=... ASO_REF=...
//	go run ./aso/gen -schema ../shared/aso-schema                      # make catalog
//
// -aso-src may also be a checkout (its HEAD must be -aso-ref) or a plain copy
// of the tree, whose commit and date then come from -aso-git or
// -aso-commit/-aso-commit-date. -facts-out writes the extracted facts files,
// byte for byte those of ../shared/aso-schema at the same commit.
//
// Either way the generator reads kinds.json, schema/<group>/<version>.json,
// exceptions.json and provenance.json, checks that every fact is consistent
// (every referenced type exists, every ARM pointer resolves through the ARM
// payload types, every generated kind has its spec type) and writes two
// files: catalog.json.gz (provenance, kinds, and an index into packages.bin)
// and packages.bin (one gzip member per API package, decoded by the runtime
// only when one of its kinds is used). The provenance's factsSha256 is the
// hash of the facts files, the same for both inputs. The output is
// deterministic for given facts and -date; without -date a catalog made from
// unchanged facts keeps the date it has.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/aso/gen/asosrc"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// kindIn is one row of kinds.json (only the fields the catalog keeps).
type kindIn struct {
	Group          string          `json:"group"`
	CRDVersion     string          `json:"crdVersion"`
	Kind           string          `json:"kind"`
	Status         string          `json:"status"`
	SupportedFrom  string          `json:"supportedFrom"`
	Generated      *bool           `json:"generated"`
	APIVersion     *string         `json:"armApiVersion"`
	ARMType        string          `json:"armType"`
	ARMIDTemplate  string          `json:"armIdTemplate"`
	Scope          string          `json:"scope"`
	Owner          json.RawMessage `json:"owner"`
	OwnerKind      string          `json:"ownerKind"`
	OwnerGroup     string          `json:"ownerGroup"`
	Singleton      *string         `json:"singletonName"`
	AzureNameField bool            `json:"azureNameField"`
	AzureNameDef   *struct {
		UUIDv5 string `json:"uuidv5"`
		Random bool   `json:"namingConventionRandom"`
	} `json:"azureNameDefault"`
	Hooks      []string `json:"hooks"`
	Operations []string `json:"operations"`
	SpecType   string   `json:"specType"`
	SchemaFile string   `json:"schemaFile"`
}

// kindOut is one kind in the catalog; keep in sync with package aso.
type kindOut struct {
	Group          string      `json:"g"`
	Version        string      `json:"v"`
	Kind           string      `json:"k"`
	Status         string      `json:"status,omitempty"`
	SupportedFrom  string      `json:"from,omitempty"`
	NotGenerated   bool        `json:"notGenerated,omitempty"`
	APIVersion     string      `json:"api,omitempty"`
	ARMType        string      `json:"armType,omitempty"`
	IDTemplate     string      `json:"idTemplate,omitempty"`
	Scope          string      `json:"scope,omitempty"`
	OwnerGroup     string      `json:"ownerGroup,omitempty"`
	OwnerKind      string      `json:"ownerKind,omitempty"`
	ArbitraryOwner bool        `json:"arbitraryOwner,omitempty"`
	Singleton      string      `json:"singleton,omitempty"`
	AzureNameField bool        `json:"azureNameField,omitempty"`
	UUIDv5         string      `json:"uuidv5,omitempty"`
	RandomNaming   bool        `json:"randomNaming,omitempty"`
	Hooks          []string    `json:"hooks,omitempty"`
	Operations     []string    `json:"ops,omitempty"`
	SpecType       string      `json:"spec,omitempty"`
	Package        string      `json:"pkg,omitempty"`
	Removed        *removedOut `json:"removed,omitempty"`
}

type provenanceOut struct {
	Source        string `json:"source"`
	License       string `json:"license"`
	Commit        string `json:"commit"`
	CommitDate    string `json:"commitDate"`
	Generator     string `json:"generator"`
	GeneratedAt   string `json:"generatedAt"`
	FactsSHA256   string `json:"factsSha256"`
	Kinds         int    `json:"kinds"`
	ConvertKinds  int    `json:"convertibleKinds"`
	Packages      int    `json:"packages"`
	SchemaVersion int    `json:"schemaVersion"`
	// Removed versions (-aso-git): their kinds, and the release tags read
	// with their commits ("v2.3.0 <sha>").
	RemovedKinds  int      `json:"removedKinds,omitempty"`
	Releases      []string `json:"releases,omitempty"`
	RemovedSHA256 string   `json:"removedSha256,omitempty"`
}

type catalogOut struct {
	Provenance provenanceOut     `json:"provenance"`
	Kinds      []kindOut         `json:"kinds"`
	Packages   map[string][2]int `json:"packages"` // offset and length of the package's gzip member in packages.bin
}

// schemaFile is the shape of schema/<group>/<version>.json, checked but
// otherwise copied.
type schemaFile struct {
	Group      string                     `json:"group"`
	CRDVersion string                     `json:"crdVersion"`
	APIVersion string                     `json:"armApiVersion"`
	Kinds      map[string]json.RawMessage `json:"kinds"`
	Types      map[string]typeIn          `json:"types"`
	ARMTypes   map[string]armTypeIn       `json:"armTypes"`
}

type typeIn struct {
	ARM        string              `json:"arm,omitempty"`
	OneOf      int                 `json:"oneOf,omitempty"`
	Name       string              `json:"name,omitempty"`
	PushName   []string            `json:"pushName,omitempty"`
	Prec       map[string][]string `json:"prec,omitempty"`
	EmptyIfNil []string            `json:"emptyIfNil,omitempty"`
	Ctr        json.RawMessage     `json:"ctr,omitempty"`
	F          map[string]fieldIn  `json:"f"`
}

type fieldIn struct {
	T         string `json:"t"`
	C         string `json:"c,omitempty"`
	R         string `json:"r,omitempty"`
	E         []any  `json:"e,omitempty"`
	Req       int    `json:"req,omitempty"`
	A         string `json:"a,omitempty"`
	ARMRef    string `json:"armRef,omitempty"`
	Pair      string `json:"pair,omitempty"`
	Conv      string `json:"conv,omitempty"`
	X         string `json:"x,omitempty"`
	OwnerKind string `json:"ownerKind,omitempty"`
}

type armTypeIn struct {
	F     [][]any         `json:"f"`
	OneOf json.RawMessage `json:"oneOf,omitempty"`
}

func run(args []string) error {
	fset := flag.NewFlagSet("gen", flag.ContinueOnError)
	schemaDir := fset.String("schema", "../shared/aso-schema", "directory holding kinds.json, schema/, exceptions.json, provenance.json")
	asoSrc := fset.String("aso-src", "", "read the facts from this ASO source tree (a checkout, or with -aso-ref a Git repository) instead of -schema")
	asoRef := fset.String("aso-ref", "", "with -aso-src a Git repository (bare or not): the commit or tag whose tree to read")
	asoGit := fset.String("aso-git", "", "Git directory to ask for -aso-src's commit and date when -aso-src is a plain copy (default: -aso-src)")
	asoCommit := fset.String("aso-commit", "", "commit of -aso-src (default: asked from git)")
	asoDate := fset.String("aso-commit-date", "", "commit date of -aso-src, RFC 3339 as git's %cI (default: asked from git)")
	asoSource := fset.String("aso-source", "https://github.com/Azure/azure-service-operator", "the ASO repository named in the provenance")
	asoLicense := fset.String("aso-license", "MIT", "ASO's licence named in the provenance")
	factsOut := fset.String("facts-out", "", "with -aso-src: also write the facts files (the -schema layout) to this directory")
	out := fset.String("out", "aso/catalog/catalog.json.gz", "catalog file to write; the API packages go to packages.bin beside it")
	date := fset.String("date", "", "generation date recorded in the provenance (default: the date -out records if its facts are unchanged, else today)")
	releasesGit := fset.String("releases-git", "", "ASO Git repository holding the release tags: add the versions of -removed, each read at the tag that last had it "+
		"(default: -aso-src when it is a Git repository, else -aso-git; none: the removed versions are left out)")
	removedList := fset.String("removed", "", "the removed versions (go run ./aso/gen/removed) (default: removed.json beside -out, when there is one)")
	removedReport := fset.String("removed-report", "", "where to write, per removed package, the release read and the alias chosen (default: removed-schemas.json beside -out)")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *removedList == "" {
		if beside := filepath.Join(filepath.Dir(*out), "removed.json"); fileExists(beside) {
			*removedList = beside
		}
	}
	if *removedReport == "" {
		*removedReport = filepath.Join(filepath.Dir(*out), "removed-schemas.json")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	src := factsSource(dirFacts(*schemaDir))
	if *asoSrc != "" {
		start := time.Now()
		facts, err := extract(*asoSrc, *asoRef, *asoGit, asosrc.Provenance{
			Source: *asoSource, License: *asoLicense, Commit: *asoCommit, CommitDate: *asoDate})
		if err != nil {
			return err
		}
		for _, w := range facts.Warnings {
			log.Warn("aso source", "finding", w)
		}
		log.Info("facts extracted", "src", *asoSrc, "ref", *asoRef, "files", len(facts.Files), "took", time.Since(start).Round(time.Millisecond))
		if *factsOut != "" {
			if err := writeFacts(*factsOut, facts); err != nil {
				return err
			}
		}
		src = memFacts(facts.Files)
	} else if *factsOut != "" {
		return errors.New("-facts-out needs -aso-src")
	}

	h := sha256.New()
	read := func(rel string) ([]byte, error) {
		b, err := src.read(rel)
		if err != nil {
			return nil, fmt.Errorf("read facts: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
		return b, nil
	}

	var prov struct {
		Source     string `json:"source"`
		License    string `json:"license"`
		Commit     string `json:"commit"`
		CommitDate string `json:"commitDate"`
		KindCount  int    `json:"kindEntries"`
	}
	b, err := read("provenance.json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &prov); err != nil {
		return fmt.Errorf("provenance.json: %w", err)
	}
	b, err = read("kinds.json")
	if err != nil {
		return err
	}
	var kinds []kindIn
	if err := json.Unmarshal(b, &kinds); err != nil {
		return fmt.Errorf("kinds.json: %w", err)
	}
	if prov.KindCount != 0 && prov.KindCount != len(kinds) {
		return fmt.Errorf("kinds.json has %d entries, provenance.json says %d", len(kinds), prov.KindCount)
	}
	excb, err := read("exceptions.json")
	if err != nil {
		return err
	}

	// Schema files, sorted for a deterministic hash.
	files, err := src.schemaFiles()
	if err != nil {
		return fmt.Errorf("list schema files: %w", err)
	}
	sort.Strings(files)
	pkgs := map[string]*schemaFile{}
	rawFacts := map[string][]byte{}
	pkgOut := map[string]json.RawMessage{}
	var problems []error
	for _, rel := range files {
		b, err := read(rel)
		if err != nil {
			return err
		}
		var s schemaFile
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		key := s.Group + "/" + s.CRDVersion
		pkgs[key] = &s
		rawFacts[key] = b
		problems = append(problems, checkPackage(key, &s)...)
		// Copy only what the runtime needs.
		compact, err := json.Marshal(struct {
			APIVersion string               `json:"api"`
			Types      map[string]typeIn    `json:"types"`
			ARMTypes   map[string]armTypeIn `json:"armTypes"`
		}{s.APIVersion, s.Types, s.ARMTypes})
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		pkgOut[key] = compact
	}
	problems = append(problems, checkExceptions(excb, pkgs)...)

	var outKinds []kindOut
	convertible := 0
	for _, k := range kinds {
		o := kindOut{Group: k.Group, Version: k.CRDVersion, Kind: k.Kind, Status: k.Status, SupportedFrom: k.SupportedFrom}
		if k.Generated != nil && !*k.Generated {
			o.NotGenerated = true
			outKinds = append(outKinds, o)
			continue
		}
		if k.APIVersion != nil {
			o.APIVersion = *k.APIVersion
		}
		o.ARMType, o.IDTemplate, o.Scope = k.ARMType, k.ARMIDTemplate, k.Scope
		o.OwnerGroup, o.OwnerKind = k.OwnerGroup, k.OwnerKind
		if len(k.Owner) > 0 && string(k.Owner) != "null" {
			var ow struct {
				Arbitrary bool   `json:"arbitrary"`
				Group     string `json:"group"`
				Kind      string `json:"kind"`
			}
			if err := json.Unmarshal(k.Owner, &ow); err != nil {
				return fmt.Errorf("kinds.json %s/%s %s owner: %w", k.Group, k.CRDVersion, k.Kind, err)
			}
			o.ArbitraryOwner = ow.Arbitrary
			if o.OwnerGroup == "" {
				o.OwnerGroup, o.OwnerKind = ow.Group, ow.Kind
			}
		}
		if k.Singleton != nil {
			o.Singleton = *k.Singleton
		}
		o.AzureNameField = k.AzureNameField
		if k.AzureNameDef != nil {
			o.UUIDv5, o.RandomNaming = k.AzureNameDef.UUIDv5, k.AzureNameDef.Random
		}
		o.Hooks, o.Operations, o.SpecType = k.Hooks, k.Operations, k.SpecType
		o.Package = k.Group + "/" + k.CRDVersion
		p, ok := pkgs[o.Package]
		switch {
		case !ok:
			problems = append(problems, fmt.Errorf("kind %s %s: no schema package %s", o.Package, k.Kind, o.Package))
		case p.Types[k.SpecType].F == nil:
			problems = append(problems, fmt.Errorf("kind %s %s: spec type %q missing", o.Package, k.Kind, k.SpecType))
		case p.APIVersion != o.APIVersion:
			problems = append(problems, fmt.Errorf("kind %s %s: api-version %q, package says %q", o.Package, k.Kind, o.APIVersion, p.APIVersion))
		default:
			convertible++
		}
		if o.Scope == "" {
			problems = append(problems, fmt.Errorf("kind %s %s: no scope", o.Package, k.Kind))
		}
		outKinds = append(outKinds, o)
	}
	var rem *removedResult
	if gitDir := releasesRepo(*releasesGit, *asoSrc, *asoGit); gitDir != "" && *removedList != "" {
		if rem, err = addRemoved(log, gitDir, *removedList, kinds, rawFacts, pkgs, pkgOut); err != nil {
			return err
		}
		outKinds = append(outKinds, rem.kinds...)
		problems = append(problems, rem.problems...)
	} else if *removedList != "" {
		log.Warn("the removed versions are left out of the catalog: name ASO's Git repository (-releases-git, or -aso-src as a Git repository)", "removed", *removedList)
	}
	if len(problems) > 0 {
		return fmt.Errorf("inconsistent facts:\n%w", errors.Join(problems...))
	}

	// Each package is its own gzip member so that the runtime decompresses
	// only the packages it uses.
	keys := make([]string, 0, len(pkgOut))
	for k := range pkgOut {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pkgBin bytes.Buffer
	index := make(map[string][2]int, len(keys))
	rawPkgBytes := 0
	for _, k := range keys {
		start := pkgBin.Len()
		if err := gz(&pkgBin, pkgOut[k]); err != nil {
			return fmt.Errorf("compress package %s: %w", k, err)
		}
		index[k] = [2]int{start, pkgBin.Len() - start}
		rawPkgBytes += len(pkgOut[k])
	}
	factsSum := hex.EncodeToString(h.Sum(nil))
	if *date == "" {
		*date = keptDate(*out, factsSum)
		if rem != nil && rem.changedSince(*out) {
			*date = time.Now().UTC().Format("2006-01-02")
		}
	}
	cat := catalogOut{
		Provenance: provenanceOut{
			Source: prov.Source, License: prov.License, Commit: prov.Commit, CommitDate: prov.CommitDate,
			Generator:   "github.com/gitaso/gitaso/aso/gen",
			GeneratedAt: *date, FactsSHA256: factsSum,
			Kinds: len(outKinds) - rem.count(), ConvertKinds: convertible, Packages: len(pkgOut), SchemaVersion: 2,
			RemovedKinds: rem.count(), Releases: rem.releases(), RemovedSHA256: rem.digest(),
		},
		Kinds:    outKinds,
		Packages: index,
	}
	raw, err := json.Marshal(cat)
	if err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	var buf bytes.Buffer
	if err := gz(&buf, raw); err != nil {
		return fmt.Errorf("compress catalog: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	binPath := filepath.Join(filepath.Dir(*out), "packages.bin")
	if err := os.WriteFile(binPath, pkgBin.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write packages: %w", err)
	}
	if rem != nil {
		if err := os.WriteFile(*removedReport, rem.report, 0o644); err != nil {
			return fmt.Errorf("write removed report: %w", err)
		}
	}
	log.Info("catalog written", "out", *out, "kinds", len(outKinds), "convertible", convertible,
		"packages", len(pkgOut), "kindsGzipBytes", buf.Len(), "packagesJSONBytes", rawPkgBytes,
		"packagesGzipBytes", pkgBin.Len(), "commit", prov.Commit)
	return nil
}

// gz appends data as one gzip member (no timestamp, so output is deterministic).
func gz(w *bytes.Buffer, data []byte) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// checkPackage verifies that the facts of one package are self-consistent.
func checkPackage(key string, s *schemaFile) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(key+": "+format, a...)) }
	for an, at := range s.ARMTypes {
		for _, f := range at.F {
			if len(f) == 0 {
				bad("arm type %s: empty field", an)
				continue
			}
			if _, ok := f[0].(string); !ok {
				bad("arm type %s: field name %v", an, f[0])
			}
			if len(f) > 1 {
				if c, ok := f[1].(string); ok && c != "" {
					if _, ok := s.ARMTypes[c]; !ok {
						bad("arm type %s.%v: child %s missing", an, f[0], c)
					}
				}
			}
		}
	}
	for tn, t := range s.Types {
		if t.ARM != "" {
			if _, ok := s.ARMTypes[t.ARM]; !ok {
				bad("type %s: arm type %s missing", tn, t.ARM)
				continue
			}
		}
		for fn, f := range t.F {
			if f.R != "" {
				if _, ok := s.Types[f.R]; !ok {
					bad("type %s.%s: type %s missing", tn, fn, f.R)
				}
			}
			if f.A == "" || t.ARM == "" {
				continue
			}
			if _, err := resolvePointer(s, t.ARM, f.A); err != nil {
				bad("type %s.%s: %v", tn, fn, err)
			}
		}
		for p := range t.Prec {
			if _, err := resolvePointer(s, t.ARM, p); err != nil {
				bad("type %s prec: %v", tn, err)
			}
		}
	}
	return errs
}

// resolvePointer walks a JSON pointer through the ARM payload types.
func resolvePointer(s *schemaFile, arm, ptr string) (string, error) {
	if !strings.HasPrefix(ptr, "/") {
		return "", fmt.Errorf("pointer %q does not start with /", ptr)
	}
	cur := arm
	toks := strings.Split(ptr[1:], "/")
	for i, tok := range toks {
		at, ok := s.ARMTypes[cur]
		if !ok {
			return "", fmt.Errorf("pointer %q: arm type %q missing", ptr, cur)
		}
		found := false
		for _, f := range at.F {
			if f[0] == tok {
				found = true
				if i < len(toks)-1 {
					c, _ := f[1].(string)
					if len(f) < 2 || c == "" {
						return "", fmt.Errorf("pointer %q: %s is not an object", ptr, tok)
					}
					cur = c
				}
				break
			}
		}
		if !found {
			return "", fmt.Errorf("pointer %q: %s not in arm type %s", ptr, tok, cur)
		}
	}
	return cur, nil
}

// checkExceptions cross-checks exceptions.json against the packages: every
// listed one-of type must be marked oneOf and every rename must be mapped.
func checkExceptions(b []byte, pkgs map[string]*schemaFile) []error {
	var ex struct {
		Renames [][]any `json:"renames"`
		OneOf   [][]any `json:"oneOf"`
	}
	if err := json.Unmarshal(b, &ex); err != nil {
		return []error{fmt.Errorf("exceptions.json: %w", err)}
	}
	var errs []error
	for _, o := range ex.OneOf {
		pkg, _ := o[0].(string)
		tn, _ := o[1].(string)
		p := pkgs[pkg]
		if p == nil || p.Types[tn].OneOf != 1 {
			errs = append(errs, fmt.Errorf("exceptions.json: one-of %s %s not marked in schema", pkg, tn))
		}
	}
	for _, r := range ex.Renames {
		pkg, _ := r[0].(string)
		tn, _ := r[1].(string)
		fn, _ := r[2].(string)
		ptr, _ := r[3].(string)
		p := pkgs[pkg]
		if p == nil || p.Types[tn].F[fn].A != ptr {
			errs = append(errs, fmt.Errorf("exceptions.json: rename %s %s.%s → %s not in schema", pkg, tn, fn, ptr))
		}
	}
	return errs
}
