package emulator

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Azure's public regions, as GET /subscriptions/{id}/locations lists them (physical regions; the emulator accepts
// every one of them for every type), and the location check ARM makes on a create: a tracked resource whose
// location is not a region answers 400 LocationNotAvailableForResourceType, a resource group 400
// LocationNotAvailableForResourceGroup, both listing the regions. "global" is accepted for every type (ARM accepts
// it for the global types only). A location may be written as its name ("westeurope") or display name ("West
// Europe").

type region struct {
	Name, DisplayName, Geography, Physical, Paired string
	Recommended                                    bool
}

var regions = []region{
	{"eastus", "East US", "US", "Virginia", "westus", true},
	{"eastus2", "East US 2", "US", "Virginia", "centralus", true},
	{"southcentralus", "South Central US", "US", "Texas", "northcentralus", true},
	{"westus2", "West US 2", "US", "Washington", "westcentralus", true},
	{"westus3", "West US 3", "US", "Phoenix", "eastus", true},
	{"australiaeast", "Australia East", "Asia Pacific", "New South Wales", "australiasoutheast", true},
	{"southeastasia", "Southeast Asia", "Asia Pacific", "Singapore", "eastasia", true},
	{"northeurope", "North Europe", "Europe", "Ireland", "westeurope", true},
	{"swedencentral", "Sweden Central", "Europe", "Gävle", "swedensouth", true},
	{"uksouth", "UK South", "Europe", "London", "ukwest", true},
	{"westeurope", "West Europe", "Europe", "Netherlands", "northeurope", true},
	{"centralus", "Central US", "US", "Iowa", "eastus2", true},
	{"southafricanorth", "South Africa North", "Africa", "Johannesburg", "southafricawest", true},
	{"centralindia", "Central India", "Asia Pacific", "Pune", "southindia", true},
	{"eastasia", "East Asia", "Asia Pacific", "Hong Kong", "southeastasia", true},
	{"japaneast", "Japan East", "Asia Pacific", "Tokyo, Saitama", "japanwest", true},
	{"koreacentral", "Korea Central", "Asia Pacific", "Seoul", "koreasouth", true},
	{"canadacentral", "Canada Central", "Canada", "Toronto", "canadaeast", true},
	{"francecentral", "France Central", "Europe", "Paris", "francesouth", true},
	{"germanywestcentral", "Germany West Central", "Europe", "Frankfurt", "germanynorth", true},
	{"italynorth", "Italy North", "Europe", "Milan", "", true},
	{"norwayeast", "Norway East", "Europe", "Norway", "norwaywest", true},
	{"polandcentral", "Poland Central", "Europe", "Warsaw", "", true},
	{"spaincentral", "Spain Central", "Europe", "Madrid", "", true},
	{"switzerlandnorth", "Switzerland North", "Europe", "Zurich", "switzerlandwest", true},
	{"mexicocentral", "Mexico Central", "Mexico", "Querétaro State", "", true},
	{"uaenorth", "UAE North", "Middle East", "Dubai", "uaecentral", true},
	{"brazilsouth", "Brazil South", "South America", "Sao Paulo State", "southcentralus", true},
	{"israelcentral", "Israel Central", "Middle East", "Israel", "", true},
	{"qatarcentral", "Qatar Central", "Middle East", "Doha", "", true},
	{"northcentralus", "North Central US", "US", "Illinois", "southcentralus", false},
	{"westus", "West US", "US", "California", "eastus", false},
	{"japanwest", "Japan West", "Asia Pacific", "Osaka", "japaneast", false},
	{"westcentralus", "West Central US", "US", "Wyoming", "westus2", false},
	{"southafricawest", "South Africa West", "Africa", "Cape Town", "southafricanorth", false},
	{"australiacentral", "Australia Central", "Asia Pacific", "Canberra", "australiacentral2", false},
	{"australiacentral2", "Australia Central 2", "Asia Pacific", "Canberra", "australiacentral", false},
	{"australiasoutheast", "Australia Southeast", "Asia Pacific", "Victoria", "australiaeast", false},
	{"jioindiacentral", "Jio India Central", "Asia Pacific", "Nagpur", "jioindiawest", false},
	{"jioindiawest", "Jio India West", "Asia Pacific", "Jamnagar", "jioindiacentral", false},
	{"koreasouth", "Korea South", "Asia Pacific", "Busan", "koreacentral", false},
	{"southindia", "South India", "Asia Pacific", "Chennai", "centralindia", false},
	{"westindia", "West India", "Asia Pacific", "Mumbai", "southindia", false},
	{"canadaeast", "Canada East", "Canada", "Quebec", "canadacentral", false},
	{"francesouth", "France South", "Europe", "Marseille", "francecentral", false},
	{"germanynorth", "Germany North", "Europe", "Berlin", "germanywestcentral", false},
	{"norwaywest", "Norway West", "Europe", "Norway", "norwayeast", false},
	{"switzerlandwest", "Switzerland West", "Europe", "Geneva", "switzerlandnorth", false},
	{"ukwest", "UK West", "Europe", "Cardiff", "uksouth", false},
	{"uaecentral", "UAE Central", "Middle East", "Abu Dhabi", "uaenorth", false},
	{"brazilsoutheast", "Brazil Southeast", "South America", "Rio", "brazilsouth", false},
	{"swedensouth", "Sweden South", "Europe", "Malmo", "swedencentral", false},
	{"eastus2euap", "East US 2 EUAP", "US", "", "centraluseuap", false},
	{"centraluseuap", "Central US EUAP", "US", "", "eastus2euap", false},
}

var regionByName = func() map[string]*region {
	m := map[string]*region{}
	for i := range regions {
		m[regions[i].Name] = &regions[i]
	}
	return m
}()

// knownLocation reports whether loc (a name or display name) is a region or "global".
func knownLocation(loc string) bool {
	n := normalizeRegion(loc)
	return n == "global" || regionByName[n] != nil
}

func regionNames() string {
	names := make([]string, len(regions))
	for i, r := range regions {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}

// locationError is ARM's answer to a create in a location that is not a region, nil when loc is one.
func locationError(typ, loc string) *armError {
	if knownLocation(loc) {
		return nil
	}
	if strings.EqualFold(typ, typeResourceGroup) {
		return newARMError(http.StatusBadRequest, "LocationNotAvailableForResourceGroup",
			"The provided location '%s' is not available for resource group. List of available regions is '%s'.", loc, regionNames())
	}
	return newARMError(http.StatusBadRequest, "LocationNotAvailableForResourceType",
		"The provided location '%s' is not available for resource type '%s'. List of available regions for the resource type is '%s'.", loc, typ, regionNames())
}

// serveLocations answers GET /subscriptions/{id}/locations.
func (e *Emulator) serveLocations(w http.ResponseWriter, p armPath) {
	sub := "/subscriptions/" + p.Sub
	values := make([]any, 0, len(regions))
	for _, r := range regions {
		cat := "Other"
		if r.Recommended {
			cat = "Recommended"
		}
		meta := map[string]any{"regionType": "Physical", "regionCategory": cat, "geographyGroup": r.Geography, "physicalLocation": r.Physical}
		if r.Paired != "" {
			meta["pairedRegion"] = []any{map[string]any{"name": r.Paired, "id": sub + "/locations/" + r.Paired}}
		}
		values = append(values, map[string]any{
			"id": sub + "/locations/" + r.Name, "name": r.Name, "type": "Region", "displayName": r.DisplayName,
			"regionalDisplayName": "(" + r.Geography + ") " + r.DisplayName, "metadata": meta,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": values})
}

// refuseInvalidCreate answers 400 to the create of a resource whose name or location ARM refuses (names.go,
// locationError). It leaves updates, and callers without write access (their 403 comes first), to the generic PUT.
func (e *Emulator) refuseInvalidCreate(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) bool {
	typeKey := strings.ToLower(p.Type)
	e.mu.RLock()
	exists := e.store.get(strings.ToLower(p.ID)) != nil || e.checkParent(p) != nil // a missing parent answers first
	allowed := e.rbac.allowed(c.Oid, strings.ToLower(actionFor(p.Type, "write")), strings.ToLower(p.ID))
	e.mu.RUnlock()
	if exists || !allowed {
		return false
	}
	if aerr := nameError(typeKey, p.Name); aerr != nil {
		e.writeErr(w, info, aerr)
		return true
	}
	var in struct {
		Location *string `json:"location"`
	}
	if json.Unmarshal(peekBody(r), &in) != nil || in.Location == nil || *in.Location == "" || !isTracked(p, typeKey) {
		return false
	}
	if aerr := locationError(p.Type, *in.Location); aerr != nil {
		e.writeErr(w, info, aerr)
		return true
	}
	return false
}
