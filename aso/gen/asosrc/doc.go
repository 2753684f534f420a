// Package asosrc extracts the ASO conversion facts from an Azure Service
// Operator v2 source tree, the facts that aso/gen turns into the catalog
// package aso embeds.
//
// It reads ASO's files as text and Go syntax (go/parser, go/ast); it never
// compiles, imports or runs ASO's code. The inputs are the files that
// ../shared/aso-schema/README.md lists:
//
//   - docs/hugo/content/reference/<group>/_index.md: the kinds and CRD
//     versions, their status, supportedFrom and sample;
//   - v2/api/<group>/<version>/*_types_gen.go: the resource methods (GetType,
//     GetAPIVersion, AzureName, GetResourceScope, GetSupportedOperations), the
//     owner, the "Generated from" and ARM URI comments, the spec structs and the
//     ConvertToARM bodies;
//   - v2/api/<group>/<version>/arm/*_types_gen.go: the ARM payload structs;
//   - v2/api/<group>/customizations/*.go: only the names of the extension
//     interfaces each kind implements (its hooks);
//   - v2/api/<group>/<version>/webhook/*_defaults.go: which kinds default
//     azureName to a UUIDv5.
//
// The result is a [Facts]: the files of a facts directory in the shared
// format (kinds.json, provenance.json, exceptions.json and
// schema/<group>/<version>.json), byte for byte what the former out-of-tree
// extractor wrote at the pinned commit, so the catalog's factsSha256 names the
// same facts whichever tool extracted them. Two of that extractor's choices
// are kept for this reason: a reference index row whose Resource cell is not
// a link is not read (the kind is then "unlisted", as appconfiguration
// v20220501 is), and an extension kind's armIdTemplate replaces only the ARM
// URI's first segment with {ownerArmId} (kubernetesconfiguration's
// Extension and FluxConfiguration read "{ownerArmId}/{subscriptionId}/...";
// package aso builds extension IDs from the owner and does not read it).
//
// The shapes of older releases read too, so that every minor release since
// v2.0.0 extracts: index links to the published site (before v2.11),
// GetAPIVersion returning string(APIVersion_Value), resources without
// GetSupportedOperations (before v2.4: PUT, GET and DELETE, as ASO then sent
// to every resource), genruntime.KubernetesExporter's
// ExportKubernetesResources (azureGeneratedSecrets), and a resource without
// an ARM URI comment (containerservice ManagedCluster in v2.11 to v2.17: the
// URI is built from the scope and the ARM type, and a uriNotes entry says
// so). Storage versions are not API packages: only directories with ARM
// payload types are ([Packages]).
//
// The tree is any fs.FS: a directory ([Extract], [Kinds], [Schema]) or a
// commit's tree read from ASO's Git repository without a checkout
// ([GitTree], then [ExtractFS]). Output is deterministic: everything is
// sorted or kept in source order, and the only date is the commit date the
// caller passes in [Provenance]. Input it cannot read is an error naming the
// file (and line, for the index); exported methods of extension types that
// are no known hook are reported in [Facts].Warnings.
//
// The kinds side (kinds.json, provenance.json) is in extract.go and kinds*.go;
// the schema side (schema files, exceptions.json) in schema*.go.
package asosrc
