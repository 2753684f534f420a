// Command roles writes aso/roles/builtin-roles.json, the table of Azure's
// built-in role definitions (roleName → GUID) that package aso embeds to
// resolve a RoleAssignment's roleDefinitionReference.wellKnownName offline.
//
// Usage (from the repository root; `make roles` runs it):
//
//	go run ./aso/gen/roles -from DIR|FILE -source TEXT [-supplement FILE -supplement-source TEXT] [-crosscheck FILE -crosscheck-source TEXT] [-date YYYY-MM-DD] -out aso/roles/builtin-roles.json
//
// -from is what Azure answers for its role definitions, in any of three
// shapes: a directory of one JSON file per role (each an element of
// `az role definition list -o json`, as github.com/easimon/azure-builtin-roles
// keeps them under azure-roles/), a file holding that whole list, or a file
// holding ARM's own list response ({"value": [{"name", "properties": {...}}]},
// GET /providers/Microsoft.Authorization/roleDefinitions?api-version=2022-04-01,
// the call ASO makes). Only roles whose type is BuiltInRole are kept, as ASO
// keeps them. -crosscheck names a second list in the same shapes or in the
// {name, roleName} shape of Azure/terraform-azure-avm-utl-roledefinitions
// (modules/cached-data/role_definitions.tf.json): every GUID of it must be in
// the table, and the roles it names differently are listed in the output's
// provenance.
//
// A subscription's role list (what `az role definition list` and the AVM
// cache read) leaves out the built-in roles that cannot be assigned at "/"
// but only at a tenant-level provider scope (Reservations Reader at
// /providers/Microsoft.Capacity, the Service Group roles); ASO lists at "/"
// and gets them. -supplement (aso/gen/roles/supplement.json, in any of the
// shapes above) adds such roles, read from Microsoft's documentation, when
// -from lacks their GUID. The output is deterministic for a given input and
// -date.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "roles:", err)
		os.Exit(1)
	}
}

// Role is one row of the table.
type Role struct {
	RoleName    string `json:"roleName"`
	Name        string `json:"name"` // the role definition's GUID
	Type        string `json:"roleType"`
	Description string `json:"description,omitempty"`
}

// Table is the file package aso embeds.
type Table struct {
	Provenance Provenance `json:"provenance"`
	Roles      []Role     `json:"roles"`
}

// Provenance says where the table came from.
type Provenance struct {
	Source      string   `json:"source"`
	Generator   string   `json:"generator"`
	GeneratedAt string   `json:"generatedAt"`
	Count       int      `json:"count"`
	Supplement  string   `json:"supplement,omitempty"`
	CrossCheck  string   `json:"crossCheck,omitempty"`
	Renamed     []string `json:"renamedSinceCrossCheck,omitempty"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("roles", flag.ContinueOnError)
	from := fs.String("from", "", "directory of per-role JSON files, or a file with a role definition list")
	source := fs.String("source", "", "where -from comes from (repository, path, commit, date), written into the table")
	supp := fs.String("supplement", "", "roles to add when -from lacks their GUID (same shapes as -from)")
	suppSource := fs.String("supplement-source", "", "where -supplement comes from")
	cross := fs.String("crosscheck", "", "a second role list whose GUIDs must all be in the table")
	crossSource := fs.String("crosscheck-source", "", "where -crosscheck comes from")
	date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "generation date written into the table")
	out := fs.String("out", "aso/roles/builtin-roles.json", "output file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *source == "" {
		return errors.New("-from and -source are required")
	}
	roles, err := read(*from)
	if err != nil {
		return err
	}
	nFrom := len(roles)
	var added []string
	if *supp != "" {
		extra, err := read(*supp)
		if err != nil {
			return fmt.Errorf("-supplement: %w", err)
		}
		have := map[string]bool{}
		for _, r := range roles {
			have[r.Name] = true
		}
		for _, r := range extra {
			if !have[r.Name] {
				roles = append(roles, r)
				added = append(added, r.RoleName)
			}
		}
		sortRoles(roles)
	}
	if err := check(roles); err != nil {
		return err
	}
	t := Table{Roles: roles, Provenance: Provenance{
		Source: fmt.Sprintf("%s: %d roles", *source, nFrom), Generator: "github.com/gitaso/gitaso/aso/gen/roles", GeneratedAt: *date, Count: len(roles),
	}}
	if len(added) > 0 {
		t.Provenance.Supplement = fmt.Sprintf("%s: %d roles assignable only at tenant-level provider scopes, which a subscription's list leaves out: %s",
			*suppSource, len(added), strings.Join(added, ", "))
	}
	if *cross != "" {
		other, err := read(*cross)
		if err != nil {
			return fmt.Errorf("-crosscheck: %w", err)
		}
		byGUID := map[string]Role{}
		for _, r := range roles {
			byGUID[r.Name] = r
		}
		var missing []string
		for _, o := range other {
			r, ok := byGUID[o.Name]
			switch {
			case !ok:
				missing = append(missing, o.Name+" "+o.RoleName)
			case r.RoleName != o.RoleName:
				t.Provenance.Renamed = append(t.Provenance.Renamed, fmt.Sprintf("%s: %q, was %q", o.Name, r.RoleName, o.RoleName))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("-crosscheck: %d roles are not in -from: %s", len(missing), strings.Join(missing, ", "))
		}
		sort.Strings(t.Provenance.Renamed)
		t.Provenance.CrossCheck = fmt.Sprintf("%s: all %d GUIDs present, %d with the same roleName, %d renamed since (listed); %d roles of -from are newer than it",
			*crossSource, len(other), len(other)-len(t.Provenance.Renamed), len(t.Provenance.Renamed), nFrom-len(other))
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("roles: %d built-in roles written to %s\n", len(roles), *out)
	return nil
}

// rawRole accepts the three shapes of a role definition: az's flattened one,
// ARM's (under properties) and the {name, roleName} pairs of the AVM cache.
type rawRole struct {
	Name        string `json:"name"`
	RoleName    string `json:"roleName"`
	RoleType    string `json:"roleType"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Properties  *struct {
		RoleName    string `json:"roleName"`
		Type        string `json:"type"`
		RoleType    string `json:"roleType"`
		Description string `json:"description"`
	} `json:"properties"`
}

func (r rawRole) role() (Role, bool) {
	out := Role{Name: strings.ToLower(r.Name), RoleName: r.RoleName, Description: r.Description, Type: r.RoleType}
	if p := r.Properties; p != nil {
		out.RoleName, out.Description, out.Type = p.RoleName, p.Description, p.Type
		if out.Type == "" {
			out.Type = p.RoleType
		}
	}
	if out.Type == "" && r.Type == "" {
		out.Type = "BuiltInRole" // the AVM cache keeps built-in roles only
	}
	return out, out.Type == "BuiltInRole"
}

func read(path string) ([]Role, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var raws []rawRole
	if st.IsDir() {
		files, err := filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var r rawRole
			if err := json.Unmarshal(b, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			raws = append(raws, r)
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if raws, err = decodeList(b); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	var roles []Role
	for _, r := range raws {
		if x, ok := r.role(); ok {
			roles = append(roles, x)
		}
	}
	sortRoles(roles)
	return roles, nil
}

func sortRoles(roles []Role) {
	sort.Slice(roles, func(i, j int) bool {
		a, b := strings.ToLower(roles[i].RoleName), strings.ToLower(roles[j].RoleName)
		if a != b {
			return a < b
		}
		return roles[i].Name < roles[j].Name
	})
}

// decodeList reads a JSON array, ARM's {"value": [...]}, or the AVM cache's
// {"locals": {"role_definitions_cached": {"value": [...]}}}.
func decodeList(b []byte) ([]rawRole, error) {
	var list []rawRole
	if json.Unmarshal(b, &list) == nil {
		return list, nil
	}
	var doc struct {
		Value  []rawRole `json:"value"`
		Locals struct {
			Cached struct {
				Value []rawRole `json:"value"`
			} `json:"role_definitions_cached"`
		} `json:"locals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Value != nil {
		return doc.Value, nil
	}
	if doc.Locals.Cached.Value != nil {
		return doc.Locals.Cached.Value, nil
	}
	return nil, errors.New("no role definitions found")
}

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// check refuses a table ASO's lookup could not use: a malformed GUID, an
// empty name, or two roles whose names differ only in case (ASO keys them
// lower-cased, so one would hide the other). Names are kept byte for byte,
// even Azure's "Azure Arc VMware Administrator role " with its trailing
// space: ASO matches them exactly, only case-insensitively.
func check(roles []Role) error {
	if len(roles) == 0 {
		return errors.New("no built-in roles read")
	}
	names, guids := map[string]string{}, map[string]string{}
	for _, r := range roles {
		if !guidRE.MatchString(r.Name) {
			return fmt.Errorf("role %q: %q is not a GUID", r.RoleName, r.Name)
		}
		if strings.TrimSpace(r.RoleName) == "" {
			return fmt.Errorf("role %s has no roleName", r.Name)
		}
		if o, ok := names[strings.ToLower(r.RoleName)]; ok {
			return fmt.Errorf("roles %s and %s are both named %q (case-insensitively)", o, r.Name, r.RoleName)
		}
		if o, ok := guids[r.Name]; ok {
			return fmt.Errorf("roles %q and %q have the same GUID %s", o, r.RoleName, r.Name)
		}
		names[strings.ToLower(r.RoleName)], guids[r.Name] = r.Name, r.RoleName
	}
	return nil
}
