// Package aso is gitaso's model of Azure Service Operator v2 resources: which
// kinds exist in which CRD versions, how they are named, where they live in
// ARM, what they depend on, and how their spec becomes the exact JSON body that
// ASO sends to ARM.
//
// Nothing here is a hand-written table per kind. The facts are read from
// ASO's own source, its generated code and reference docs (package
// ./gen/asosrc, which parses them and never runs them), and compiled by the
// generator in ./gen into catalog/catalog.json.gz (provenance: ASO's
// repository, licence, commit and commit date; and the kinds table) and
// catalog/packages.bin (one gzip member per API package), both embedded in
// the binary and decoded lazily: the kinds table on first use (about 13 ms),
// each API package the first time one of its kinds is used (about 2 ms).
// Regenerate from ASO's Git directory at a commit or tag
// (docs/aso-upgrade.md):
//
//	make aso-catalog ASO_SRC=<ASO git dir> ASO_REF=<commit or tag>
//
// The same facts, extracted earlier by a tool outside this repository, are in
// ../shared/aso-schema; `make catalog` builds the same catalog byte for byte
// from them, and TestCatalogUpToDate fails when they have changed since.
//
// Versions that an ASO release since v2.0.0 shipped and the catalog's commit no
// longer has are listed in catalog/removed.json (generated from ASO's release
// tags by `make aso-removed`): LookupRemoved says the last release that had
// one, the first without it and the versions of the same kind that replace it.
// The catalog holds them too (`make aso-catalog`), each read at the release
// that last had it, so that a manifest written for any release since v2.0.0
// converts as that release converted it: Lookup finds them with Kind.Removed
// set (Kinds lists only the versions ASO ships, RemovedKinds the others), and
// a removed package whose conversion a shipped one reproduces exactly (ASO's
// v1beta… versions renamed v1api…, mostly) uses that package
// (Removed.SchemaOf). The planner plans them with Removed.Warning() on the
// resource.
//
// A typical use, for one object of a Git snapshot:
//
//	k, ok := aso.Lookup("storage.azure.com", "v1api20230101", "StorageAccount")
//	name, err := aso.AzureName(k, "default", "mystorage", spec)
//	id, err := aso.ARMID(k, subscriptionID, ownerARMID, name)
//	deps, err := aso.Dependencies(k, spec)       // references, secrets, config maps → DAG edges
//	body, err := aso.Convert(k, spec, name, resolver)
//	// PUT id?api-version=k.APIVersion with body.JSON
//
// Convert reproduces ASO's ConvertToARM followed by Go's encoding/json: ARM
// struct field order, sorted map keys, HTML escaping, omitted unset fields,
// explicit nulls and empty collections where ASO's payload type asks for them,
// one-of unions flattened to the chosen variant, references resolved to ARM IDs,
// secrets and *FromConfig values resolved through a Resolver. Values that come
// from secrets are listed in Body.Secrets and values only known after another
// resource is applied are written as UnknownValue and listed in Body.Unknown.
//
// Validate checks a manifest against the schema before anything is sent
// (unknown or wrongly cased fields, enums, required fields, *FromConfig pairs,
// references, owner kinds); Suggest and LooksLikeASO help report unknown
// group/version/kinds. testdata/invalid holds a corpus of invalid manifests
// with their golden error text.
//
// Behaviour that lives in ASO's hand-written hooks (kinds.json "hooks") is not
// part of the conversion, except RoleAssignment's wellKnownName, which the
// conversion resolves as ASO's hook does, from the embedded table of Azure's
// built-in roles (roles.go): the body holds the role definition's ID in the
// owner's subscription, offline too, and a misspelt name is refused.
//
// The other hooks are a registry keyed by group/kind (hooks*.go), one type
// per phase, read from ASO's api/*/customizations: payload modifiers (Key
// Vault createMode, the child collections a VNet/NSG/route table/load
// balancer/scale set PUT keeps), pre-reconcile checks of the resource and its
// owner, post-reconcile checks, custom deletes, per-kind error classifiers
// and success handlers. The checks and classifiers are pure functions of
// ARM's answers; the phases that need Azure take an ARM. The executor runs
// them through ModifyPayload, PreReconcile, PostReconcile, Delete,
// ClassifyError and Succeeded:
//
//	c, err := aso.PreReconcile(ctx, arm, t)   // GETs the owner/resource for kinds with checks
//	if c.Action != aso.Proceed { /* Ready False, c.Reason(), c.Message; retry next run */ }
//	body, err = aso.ModifyPayload(ctx, arm, t, body)
//	// PUT body …
//	post, err := aso.PostReconcile(ctx, arm, t, response)
//
// PlanPayload shows in a plan what those payload modifiers will send (a
// vault's createMode), or UnknownValue where only the apply can tell.
//
// Exports (exports*.go) are ASO's operatorSpec.configMaps and .secrets: a
// table of what each kind exports from ARM's answer and which extra ARM call
// (listKeys, cluster credentials, the private endpoint's NIC) gives the rest,
// with the path and api-version of the SDK client ASO's exporter uses.
// Expressions (cel*.go) are configMapExpressions/secretExpressions in ASO's
// CEL environment, with self typed from the catalog as ASO types it from the
// Go resource type; Validate compiles them, pure, so validate and plan refuse
// a misspelt field before anything is applied:
//
//	vals, err := aso.Exports(ctx, arm, aso.Applied{Group: g, Version: v, Kind: k,
//		ARMID: id, Manifest: obj, Response: putResponse}, exports)
//	// write vals; err is an *ExportError naming each export that failed
//	x, err := aso.CompileExpression(kind, "self.spec.location") // cached per kind and text
//	res, err := x.Eval(ctx, aso.SelfObject(kind, obj, armDoc, azureName), secrets)
package aso
