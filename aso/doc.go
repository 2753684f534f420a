// Package aso is gitaso's model of Azure Service Operator v2 resources: which
// kinds exist in which CRD versions, how they are named, where they live in
// ARM, what they depend on, and how their spec becomes the exact JSON body that
// ASO sends to ARM.
//
// Nothing here is a hand-written table per kind. The facts come from
// ../shared/aso-schema (read from ASO's generated code, see its README) and are
// compiled by the generator in ./gen into catalog/catalog.json.gz (provenance
// and the kinds table) and catalog/packages.bin (one gzip member per API
// package), both embedded in the binary and decoded lazily: the kinds table on
// first use (about 13 ms), each API package the first time one of its kinds is
// used (about 2 ms). TestCatalogUpToDate fails when ../shared/aso-schema has
// changed since. Regenerate with
//
//	go run ./aso/gen -schema ../shared/aso-schema -out aso/catalog/catalog.json.gz
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
package aso
