package planner

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/record"
)

// Role assignments keep their ARM name.
//
// ASO names a RoleAssignment without spec.azureName with a UUIDv5 of its
// namespace, its name and its owner, and writes that name into the object's
// spec.azureName, where it stays. Azure allows one assignment of a role to
// a principal at a scope (409 RoleAssignmentExists), so an assignment that
// got another name (its manifest moved to another namespace, or its owner
// object renamed) could only be created after the old one was deleted: the
// principal would be without the access in between (1 s for one assignment,
// 8.3 s for 99, in issue 24). Creating the new one first cannot work in
// Azure. gitaso keeps the name instead, from its state:
//
//   - a RoleAssignment whose own state names another assignment at the same
//     scope keeps that name, as ASO keeps the azureName it wrote;
//   - a RoleAssignment new to the state that grants the same role to the
//     same principal at the same scope as one that left Git takes over that
//     one's name: the plan shows a move ("keeps its name ... because ..."),
//     nothing is deleted, the access never lapses.
//
// A manifest with spec.azureName, or whose metadata.name is a UUID, names
// itself: nothing is kept. A principal known only after apply (read from
// an export) is compared with the value its producer exported before, when
// the producer moved too (same ARM ID, same export key).

// keptName says where a node's kept ARM name comes from.
type keptName struct {
	from     string // the state key whose name it keeps (its own, or the one it moves from)
	name     string // the name kept
	defaults string // the name ASO's default would give it
}

const roleAssignmentsSegment = "/providers/microsoft.authorization/roleassignments/"

// roleAssignmentScope returns the scope of a role assignment's ARM ID, ""
// when id is not one.
func roleAssignmentScope(id string) string {
	i := strings.LastIndex(strings.ToLower(id), roleAssignmentsSegment)
	if i < 0 {
		return ""
	}
	return strings.ToLower(id[:i])
}

// defaultNamed reports whether a node is a role assignment named by ASO's
// default rather than by its manifest.
func defaultNamed(n *Node) bool {
	if n.Kind.UUIDv5 == "" || roleAssignmentScope(n.ARMID) == "" {
		return false
	}
	if s, _ := n.Spec["azureName"].(string); s != "" {
		return false
	}
	_, err := uuid.Parse(n.Name)
	return err != nil
}

// grant is what a role assignment grants: a role to a principal.
type grant struct{ role, principal string }

// grantOf reads a role assignment body; ok is false when either is missing
// or known only after apply.
func grantOf(body []byte) (g grant, ok bool) {
	var v struct {
		Properties struct {
			RoleDefinitionID string `json:"roleDefinitionId"`
			PrincipalID      string `json:"principalId"`
		} `json:"properties"`
	}
	if json.Unmarshal(body, &v) != nil {
		return grant{}, false
	}
	role, principal := v.Properties.RoleDefinitionID, v.Properties.PrincipalID
	if role == "" || principal == "" || role == aso.UnknownValue || principal == aso.UnknownValue {
		return grant{}, false
	}
	return grant{role: strings.ToLower(role[strings.LastIndexByte(role, '/')+1:]), principal: strings.ToLower(principal)}, true
}

// KeepNames gives the role assignments named by ASO's default the ARM name
// their state holds (see above). Call it once per run, with the state and
// the exported values the plan reads, before Azure is read and the graph is
// planned: the nodes' ARM IDs change.
func (g *Graph) KeepNames(prior map[string]record.Resource, outputs Outputs) {
	var cands []*Node
	for _, n := range g.Nodes {
		if n.kept == nil && defaultNamed(n) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return
	}
	// The role assignments leaving the state, by scope.
	var gone []string
	for key, pr := range prior {
		if g.byKey[key] == nil && roleAssignmentScope(pr.ARMID) != "" && g.byARMID.get(pr.ARMID) == nil {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	byScope := map[string][]string{}
	for _, key := range gone {
		s := roleAssignmentScope(prior[key].ARMID)
		byScope[s] = append(byScope[s], key)
	}
	var predicted Outputs
	claimed := map[string]bool{}
	for _, n := range cands {
		scope := roleAssignmentScope(n.ARMID)
		if pr, ok := prior[n.Key()]; ok {
			if pr.ARMID != "" && !sameID(pr.ARMID, n.ARMID) && roleAssignmentScope(pr.ARMID) == scope && g.byARMID.get(pr.ARMID) == nil {
				g.keep(n, n.Key(), pr.ARMID)
			}
			continue
		}
		if len(byScope[scope]) == 0 {
			continue
		}
		want, ok := g.grantOf(n, outputs)
		if !ok {
			if predicted == nil {
				predicted = g.predictMoved(prior, outputs)
			}
			if want, ok = g.grantOf(n, predicted); !ok {
				continue
			}
		}
		for _, key := range byScope[scope] {
			if claimed[key] {
				continue
			}
			if had, ok := grantOf(prior[key].AppliedBody); ok && had == want {
				claimed[key] = true
				g.keep(n, key, prior[key].ARMID)
				break
			}
		}
	}
}

// keep gives n the ARM ID id (a role assignment at its own scope).
func (g *Graph) keep(n *Node, from, id string) {
	name := id[strings.LastIndexByte(id, '/')+1:]
	g.byARMID.remove(n)
	n.kept = &keptName{from: from, name: name, defaults: n.AzureName}
	n.ARMID, n.AzureName = id, name
	g.byARMID.add(n)
}

// grantOf converts a node with the outputs given and reads its grant.
func (g *Graph) grantOf(n *Node, outputs Outputs) (grant, bool) {
	body, err := g.Convert(n, outputs)
	if err != nil {
		return grant{}, false
	}
	return grantOf(body.JSON)
}

// predictMoved returns outputs with, added, the values that resources
// moving from another state key (same ARM ID) exported there under the same
// key: a moved identity's principalId is the one it had.
func (g *Graph) predictMoved(prior map[string]record.Resource, outputs Outputs) Outputs {
	out := Outputs{}
	for k, v := range outputs {
		out[k] = v
	}
	for key, pr := range prior {
		if g.byKey[key] != nil || len(pr.Outputs) == 0 || pr.ARMID == "" {
			continue
		}
		n := g.byARMID.get(pr.ARMID)
		if n == nil || n.Key() == key {
			continue
		}
		if _, own := prior[n.Key()]; own {
			continue
		}
		for _, ex := range n.Exports {
			if ex.Secret || ex.Key == "" {
				continue
			}
			value, found := "", 0
			for ok, v := range pr.Outputs {
				if strings.HasSuffix(ok, "/"+ex.Key) && v != value {
					value, found = v, found+1
				}
			}
			if k := exportKey(n.Namespace, false, ex.Name, ex.Key); found == 1 && out[k] == "" {
				out[k] = value
			}
		}
	}
	return out
}
