package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso/gen/asosrc"
)

// removedOut is a removed kind's "removed" object in the catalog; keep in
// sync with package aso (kindJSON.Removed).
type removedOut struct {
	LastIn       string   `json:"lastIn"`
	RemovedIn    string   `json:"removedIn"`
	Replacements []string `json:"replacements"`
	SchemaOf     string   `json:"schemaOf,omitempty"`
}

// removedResult is what -releases-git adds to the catalog.
type removedResult struct {
	kinds    []kindOut
	problems []error
	tags     map[string]string // release tag → commit
	report   []byte
	sum      string // sha256 of the kinds and the packages added
}

// digest is the sha256 of the removed kinds and packages, recorded in the
// provenance (removedSha256): a catalog keeps its generation date only when
// neither the pinned commit's facts nor these changed.
func (r *removedResult) digest() string {
	if r == nil {
		return ""
	}
	return r.sum
}

// changedSince reports whether the catalog at out records other removed
// versions than r (or none while r has some).
func (r *removedResult) changedSince(out string) bool {
	b, err := os.ReadFile(out)
	if err != nil {
		return true
	}
	raw, err := gunzipBytes(b)
	if err != nil {
		return true
	}
	var old struct {
		Provenance provenanceOut `json:"provenance"`
	}
	if json.Unmarshal(raw, &old) != nil {
		return true
	}
	return old.Provenance.RemovedSHA256 != r.digest()
}

func gunzipBytes(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func (r *removedResult) count() int {
	if r == nil {
		return 0
	}
	return len(r.kinds)
}

// releases lists the tags read, "v2.3.0 <commit>", in release order.
func (r *removedResult) releases() []string {
	if r == nil {
		return nil
	}
	var out []string
	for t, c := range r.tags {
		out = append(out, t+" "+c)
	}
	sort.Slice(out, func(i, j int) bool { return releaseKey(out[i]) < releaseKey(out[j]) })
	return out
}

func releaseKey(s string) string {
	var minor, patch int
	fmt.Sscanf(s, "v2.%d.%d", &minor, &patch)
	return fmt.Sprintf("%04d.%04d", minor, patch)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// releasesRepo is the Git repository holding ASO's release tags:
// -releases-git, else -aso-src when it is one (a Git directory or a clone),
// else -aso-git.
func releasesRepo(releasesGit, asoSrc, asoGit string) string {
	switch {
	case releasesGit != "":
		return releasesGit
	case asoSrc != "":
		if fi, err := os.Stat(filepath.Join(asoSrc, "v2", "api")); err != nil || !fi.IsDir() {
			return asoSrc // a Git directory
		}
		if _, err := os.Stat(filepath.Join(asoSrc, ".git")); err == nil && asoGit == "" {
			return asoSrc // a clone
		}
	}
	return asoGit
}

// addRemoved reads the versions of removedList from the ASO repository at
// gitDir (each at the release that last had it), adds the packages that
// need their own facts to pkgOut (checked as the others are) and returns
// their kinds. The pinned commit's facts (rawFacts, kinds) decide aliases and
// what a removed kind inherits from its group and kind (hooks, ID template).
func addRemoved(log *slog.Logger, gitDir, removedList string, kinds []kindIn, rawFacts map[string][]byte, pkgs map[string]*schemaFile, pkgOut map[string]json.RawMessage) (*removedResult, error) {
	b, err := os.ReadFile(removedList)
	if err != nil {
		return nil, fmt.Errorf("removed versions: %w", err)
	}
	var list struct {
		Commit  string                `json:"commit"`
		Removed []asosrc.RemovedEntry `json:"removed"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", removedList, err)
	}
	repo, err := asosrc.OpenRepo(gitDir)
	if err != nil {
		return nil, err
	}
	cur := &asosrc.Current{Packages: map[string]*asosrc.SchemaFile{}}
	for key, raw := range rawFacts {
		s, err := asosrc.DecodeSchemaFile(raw)
		if err != nil {
			return nil, fmt.Errorf("facts %s: %w", key, err)
		}
		cur.Packages[key] = s
	}
	for _, k := range kinds {
		r := asosrc.KindRow{Group: k.Group, CRDVersion: k.CRDVersion, Kind: k.Kind, ARMType: k.ARMType,
			ARMIDTemplate: k.ARMIDTemplate, Hooks: k.Hooks}
		if k.APIVersion != nil {
			r.APIVersion = *k.APIVersion
		}
		if k.AzureNameDef != nil {
			r.UUIDv5 = k.AzureNameDef.UUIDv5
		}
		cur.Kinds = append(cur.Kinds, r)
	}
	work, err := os.MkdirTemp("", "gitaso-aso-releases-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	ps, err := asosrc.RemovedPackages(repo, list.Removed, cur, work)
	if err != nil {
		return nil, err
	}
	res := &removedResult{tags: map[string]string{}}
	var report bytes.Buffer
	report.WriteString("[\n")
	for i, p := range ps {
		key := p.Group + "/" + p.Version
		res.tags[p.LastIn] = p.Commit
		pkgKey := key
		if p.Schema != nil {
			raw, err := p.Schema.MarshalJSON()
			if err != nil {
				return nil, err
			}
			var s schemaFile
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("%s at %s: %w", key, p.LastIn, err)
			}
			res.problems = append(res.problems, checkPackage(key+"@"+p.LastIn, &s)...)
			compact, err := json.Marshal(struct {
				APIVersion string               `json:"api"`
				Types      map[string]typeIn    `json:"types"`
				ARMTypes   map[string]armTypeIn `json:"armTypes"`
			}{s.APIVersion, s.Types, s.ARMTypes})
			if err != nil {
				return nil, err
			}
			if _, dup := pkgOut[key]; dup {
				return nil, fmt.Errorf("removed package %s is also at the pinned commit", key)
			}
			pkgOut[key] = compact
			pkgs[key] = &s
		} else {
			pkgKey = p.Group + "/" + p.SchemaOf
		}
		byKind := map[string]asosrc.RemovedEntry{}
		for _, e := range p.Entries {
			byKind[e.Kind] = e
		}
		for _, k := range p.Kinds {
			e := byKind[k.Kind]
			o := kindOut{Group: k.Group, Version: k.CRDVersion, Kind: k.Kind, Status: k.Status, SupportedFrom: k.SupportedFrom,
				APIVersion: k.APIVersion, ARMType: k.ARMType, IDTemplate: k.ARMIDTemplate, Scope: k.Scope,
				OwnerGroup: k.OwnerGroup, OwnerKind: k.OwnerKind, ArbitraryOwner: k.ArbitraryOwner, AzureNameField: k.AzureNameField,
				UUIDv5: k.UUIDv5, RandomNaming: k.RandomNaming, Hooks: k.Hooks, Operations: k.Operations, SpecType: k.SpecType,
				Package: pkgKey, Removed: &removedOut{LastIn: e.LastIn, RemovedIn: e.RemovedIn, Replacements: e.Replacements, SchemaOf: p.SchemaOf}}
			if k.Singleton != nil {
				o.Singleton = *k.Singleton
			}
			if s := pkgs[pkgKey]; s == nil || s.Types[k.SpecType].F == nil {
				res.problems = append(res.problems, fmt.Errorf("removed kind %s %s: spec type %s not in package %s", key, k.Kind, k.SpecType, pkgKey))
			}
			res.kinds = append(res.kinds, o)
		}
		line, err := json.Marshal(struct {
			Package  string   `json:"package"`
			LastIn   string   `json:"lastIn"`
			Commit   string   `json:"commit"`
			Layout   string   `json:"layout"`
			SchemaOf string   `json:"schemaOf,omitempty"`
			Differs  []string `json:"differs,omitempty"`
			Empty    []string `json:"explicitEmptyFromSpec,omitempty"`
			Kinds    int      `json:"kinds"`
		}{key, p.LastIn, p.Commit, layoutName(p.Legacy), p.SchemaOf, p.Differs, p.ExplicitEmpty, len(p.Kinds)})
		if err != nil {
			return nil, err
		}
		report.Write(line)
		if i < len(ps)-1 {
			report.WriteByte(',')
		}
		report.WriteByte('\n')
	}
	report.WriteString("]\n")
	res.report = report.Bytes()
	h := sha256.New()
	for _, k := range res.kinds {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		h.Write(kb)
		h.Write([]byte{'\n'})
	}
	for _, p := range ps {
		if key := p.Group + "/" + p.Version; p.Schema != nil {
			fmt.Fprintf(h, "%s\x00%d\x00", key, len(pkgOut[key]))
			h.Write(pkgOut[key])
		}
	}
	res.sum = hex.EncodeToString(h.Sum(nil))
	aliases := 0
	for _, p := range ps {
		if p.SchemaOf != "" {
			aliases++
		}
	}
	log.Info("removed versions", "packages", len(ps), "aliases", aliases, "kinds", len(res.kinds),
		"releases", strings.Join(res.releases(), ", "))
	return res, nil
}

func layoutName(legacy bool) string {
	if legacy {
		return "api package with *_arm_types_gen.go (before v2.11.0)"
	}
	return "arm subpackage"
}
