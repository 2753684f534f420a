package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Units: the Flux Kustomizations and HelmReleases gitaso reconciles as units
// of their own (each renders, applies and fails alone), as state keeps them.
// A repository has tens of units, not thousands: the answers are read from
// the state on each request, not indexed.

// UnitList is GET /api/v1/units: the units that match the filters, sorted by
// ID, and counts over every unit (whatever the filters) for a summary such
// as "2 of 43 units failed".
type UnitList struct {
	Items []record.Unit `json:"items"`
	// Total counts every unit; Ready counts them by the status of their
	// Ready condition (True, False, Unknown); Ignored counts the releases
	// that render no ASO object (or are skipped).
	Total   int            `json:"total"`
	Ready   map[string]int `json:"ready"`
	Ignored int            `json:"ignored"`
}

// UnitDetail is GET /api/v1/units/{kind}/{namespace}/{name}: the unit and
// the resources in state it rendered (whose unit is its ID), sorted by key,
// as the resource list shows them.
type UnitDetail struct {
	record.Unit
	Resources []Resource `json:"resources"`
}

// unitView is a unit as the API shows it: a Ready condition always, Unknown
// before the unit's first record says otherwise.
func unitView(u record.Unit) record.Unit {
	if u.Ready.Type == "" {
		u.Ready.Type = record.ConditionReady
	}
	switch u.Ready.Status {
	case record.StatusTrue, record.StatusFalse:
	default:
		u.Ready.Status = record.StatusUnknown
	}
	return u
}

// unitKind normalises a ?kind= of the units (Kustomization or HelmRelease,
// any case, or the plural as kubectl accepts it); false for another kind.
func unitKind(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "":
		return "", true
	case "kustomization", "kustomizations", "ks":
		return "Kustomization", true
	case "helmrelease", "helmreleases", "hr":
		return "HelmRelease", true
	}
	return "", false
}

// listUnits is GET /api/v1/units; see the package documentation.
func (s *server) listUnits(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ready, err := record.ParseReady(q.Get("ready"))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("invalid ready=%q: want true, false or unknown", q.Get("ready")))
		return
	}
	kind, ok := unitKind(q.Get("kind"))
	if !ok {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("invalid kind=%q: want Kustomization or HelmRelease", q.Get("kind")))
		return
	}
	ns := q.Get("namespace")
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	if ns != "" && !sc.Allows(ns) {
		s.refuse(w, r, access.Read, []string{ns}, record.AuditEvent{})
		return
	}
	units, err := s.db.Units()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	units = slices.DeleteFunc(units, func(u record.Unit) bool { return !sc.Allows(u.Namespace) })
	out := UnitList{Items: []record.Unit{}, Total: len(units),
		Ready: map[string]int{record.StatusTrue: 0, record.StatusFalse: 0, record.StatusUnknown: 0}}
	for _, u := range units {
		u = unitView(u)
		out.Ready[u.Ready.Status]++
		if u.Ignored {
			out.Ignored++
		}
		if (kind != "" && u.Kind != kind) || (ns != "" && u.Namespace != ns) || (ready != "" && u.Ready.Status != ready) {
			continue
		}
		out.Items = append(out.Items, u)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// getUnit is GET /api/v1/units/{kind}/{namespace}/{name}.
func (s *server) getUnit(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	kind, ok := unitKind(v["kind"])
	if !ok || kind == "" {
		s.writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no unit of kind %q: units are Kustomization or HelmRelease", v["kind"]))
		return
	}
	if !s.readsNamespace(w, r, v["namespace"]) {
		return
	}
	sc := s.scope(r, access.Read)
	id := record.Unit{Kind: kind, Namespace: v["namespace"], Name: v["name"]}.ID()
	u, ok, err := s.db.Unit(id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("unit %s not found", id))
		return
	}
	out := UnitDetail{Unit: unitView(u), Resources: []Resource{}}
	snap, err := s.index.current(s.db)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	var es []*entry
	for _, e := range snap.entries {
		if e.unit == id && sc.Allows(e.ns) {
			es = append(es, e)
		}
	}
	if len(es) > 0 {
		enc, err := encodeItems(s.db, es, false)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		for i, b := range enc {
			if b == nil {
				continue // deleted since the index was built
			}
			var res Resource
			if err := json.Unmarshal(b, &res); err != nil {
				s.internal(w, r, fmt.Errorf("resource %s of unit %s: %w", es[i].key, id, err))
				return
			}
			out.Resources = append(out.Resources, res)
		}
	}
	s.writeJSON(w, http.StatusOK, out)
}

// unitCollector exports the units' Ready conditions, read from the state at
// scrape time (tens of records).
type unitCollector struct {
	db                          *state.DB
	ready, info, units, applied *prometheus.Desc
}

func newUnitCollector(db *state.DB) *unitCollector {
	unit := []string{"kind", "namespace", "name"}
	return &unitCollector{
		db: db,
		ready: prometheus.NewDesc("gitaso_unit_ready",
			"1 when the unit's (Flux Kustomization's or HelmRelease's) Ready condition is True, 0 when False or Unknown; "+
				"reason is the condition's reason (BuildFailed, ArtifactFailed, DependencyNotReady, ReconciliationSucceeded, …).",
			append(unit, "reason"), nil),
		info: prometheus.NewDesc("gitaso_unit_info",
			"1 per unit, with the status of its Ready condition, whether it is suspended and the revision it last applied completely "+
				"(as Flux's gotk_resource_info).",
			append(unit, "ready", "suspended", "last_applied_revision"), nil),
		units: prometheus.NewDesc("gitaso_units",
			"Units (Flux Kustomizations and HelmReleases) by the status of their Ready condition.", []string{"ready"}, nil),
		applied: prometheus.NewDesc("gitaso_unit_last_applied_timestamp_seconds",
			"Unix time the unit last applied its objects completely (its lastAppliedRevision); 0 before it ever did.", unit, nil),
	}
}

func (c *unitCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ready, c.info, c.units, c.applied} {
		ch <- d
	}
}

func (c *unitCollector) Collect(ch chan<- prometheus.Metric) {
	units, err := c.db.Units()
	if err != nil {
		for _, d := range []*prometheus.Desc{c.ready, c.info, c.units, c.applied} {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counts := map[string]int{}
	for _, u := range units {
		u = unitView(u)
		counts[u.Ready.Status]++
		ready := 0.0
		if u.Ready.Status == record.StatusTrue {
			ready = 1
		}
		gauge(c.ready, ready, u.Kind, u.Namespace, u.Name, u.Ready.Reason)
		gauge(c.info, 1, u.Kind, u.Namespace, u.Name, u.Ready.Status, strconv.FormatBool(u.Suspended), u.LastAppliedRevision)
		at := 0.0
		if !u.AppliedAt.IsZero() {
			at = float64(u.AppliedAt.UnixNano()) / 1e9
		}
		gauge(c.applied, at, u.Kind, u.Namespace, u.Name)
	}
	for _, st := range []string{record.StatusTrue, record.StatusFalse, record.StatusUnknown} {
		gauge(c.units, float64(counts[st]), st)
	}
}
