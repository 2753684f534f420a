package emulator

import "strings"

// pathKind classifies an ARM request path.
type pathKind int

const (
	pathInvalid      pathKind = iota
	pathSubList               // /subscriptions
	pathResource              // a full resource ID (including resource groups and subscriptions)
	pathTail                  // a resource or scope followed by one more segment: a collection (GET) or an action (POST)
	pathProvider              // {scope}/providers/{namespace}
	pathProviderList          // {scope}/providers
)

// armPath is the parsed form of an ARM URL path.
//
// For pathResource, ID is the canonical resource ID (keywords "subscriptions", "resourceGroups" and "providers" in
// their canonical casing, everything else as sent), Type the full type ("Microsoft.Storage/storageAccounts/blobServices"),
// Name the last segment and Parent the ID of the parent (the resource group, the subscription, the parent resource
// of a nested child, or the resource an extension resource is attached to; "" at tenant level).
//
// For pathTail, Parent/ParentType describe the resource or scope the tail hangs off, Tail is the last segment and
// Type the collection's resource type (ParentType + "/" + Tail for nested children, Namespace + "/" + Tail after a
// providers segment).
type armPath struct {
	Kind       pathKind
	ID         string
	Type       string
	Name       string
	Parent     string
	ParentType string
	Namespace  string
	Tail       string
	Sub        string
	RG         string
	// Extension is true when the resource is attached to another resource through a second providers segment.
	Extension bool
}

const (
	typeSubscription  = "Microsoft.Resources/subscriptions"
	typeResourceGroup = "Microsoft.Resources/resourceGroups"
	typeTenant        = "tenant"
)

func parseARMPath(p string) armPath {
	p = strings.Trim(p, "/")
	if p == "" {
		return armPath{}
	}
	// ARM reads empty segments as absent: `az resource create --resource-type NS/type` sends
	// ".../providers/NS//type/name" and real ARM serves it.
	segs := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	var out armPath
	i := 0
	id := ""
	curType := typeTenant
	if strings.EqualFold(segs[0], "subscriptions") {
		if len(segs) == 1 {
			return armPath{Kind: pathSubList}
		}
		out.Sub = segs[1]
		id = "/subscriptions/" + segs[1]
		curType = typeSubscription
		i = 2
		if i == len(segs) {
			return armPath{Kind: pathResource, ID: id, Type: typeSubscription, Name: segs[1], Sub: out.Sub}
		}
		if strings.EqualFold(segs[i], "resourceGroups") {
			if i+1 == len(segs) {
				return armPath{Kind: pathTail, Parent: id, ParentType: typeSubscription, Tail: segs[i], Type: typeResourceGroup, Sub: out.Sub}
			}
			out.RG = segs[i+1]
			parent := id
			id += "/resourceGroups/" + segs[i+1]
			curType = typeResourceGroup
			i += 2
			if i == len(segs) {
				return armPath{Kind: pathResource, ID: id, Type: typeResourceGroup, Name: out.RG, Parent: parent, Sub: out.Sub, RG: out.RG}
			}
		}
	}
	extension := false
	for i < len(segs) {
		if !strings.EqualFold(segs[i], "providers") {
			// e.g. /subscriptions/{s}/resources, /subscriptions/{s}/resourceGroups/{rg}/resources
			if i+1 == len(segs) {
				out.Kind = pathTail
				out.Parent, out.ParentType, out.Tail = id, curType, segs[i]
				out.Type = segs[i]
				return out
			}
			return armPath{}
		}
		if i+1 == len(segs) {
			out.Kind = pathProviderList
			out.Parent, out.ParentType = id, curType
			return out
		}
		ns := segs[i+1]
		i += 2
		if i == len(segs) {
			out.Kind = pathProvider
			out.Parent, out.ParentType, out.Namespace = id, curType, ns
			return out
		}
		if curType != typeTenant && curType != typeSubscription && curType != typeResourceGroup {
			extension = true
		}
		typ := ns + "/" + segs[i]
		if i+1 == len(segs) {
			out.Kind = pathTail
			out.Parent, out.ParentType, out.Namespace, out.Tail, out.Type = id, curType, ns, segs[i], typ
			out.Extension = extension
			return out
		}
		parent := id
		id += "/providers/" + ns + "/" + segs[i] + "/" + segs[i+1]
		name := segs[i+1]
		i += 2
		for i < len(segs) && !strings.EqualFold(segs[i], "providers") {
			if i+1 == len(segs) {
				out.Kind = pathTail
				out.Parent, out.ParentType, out.Namespace, out.Tail = id, typ, ns, segs[i]
				out.Type = typ + "/" + segs[i]
				out.Extension = extension
				return out
			}
			parent = id
			typ += "/" + segs[i]
			id += "/" + segs[i] + "/" + segs[i+1]
			name = segs[i+1]
			i += 2
		}
		curType = typ
		out.Kind = pathResource
		out.ID, out.Type, out.Name, out.Parent, out.Namespace, out.Extension = id, typ, name, parent, ns, extension
	}
	return out
}

// typeDepth is the number of type segments after the namespace (1 for top-level types).
func typeDepth(typ string) int { return strings.Count(typ, "/") }

// namespaceOf returns the provider namespace of a full type.
func namespaceOf(typ string) string {
	if i := strings.IndexByte(typ, '/'); i >= 0 {
		return typ[:i]
	}
	return typ
}
