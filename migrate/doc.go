// Package migrate moves resources between ASO running in a cluster and
// gitaso, both ways, as data: it knows no cluster client, no state and no
// plan (internal/cli wires those), only the objects.
//
// Import (`gitaso import`): Clean turns an ASO object as the API server
// returns it into the manifest its author wrote, and WriteTree writes a
// repository of them.
//
//   - Gone: status; the server's metadata (uid, resourceVersion,
//     generation, creationTimestamp, managedFields, finalizers, selfLink);
//     ASO's own annotations and finalizer (aso.IsOperatorAnnotation);
//     kubectl's last-applied annotation; Flux's kustomize-controller labels.
//   - Defaults the author did not write: the author's fields are read from
//     kubectl's last-applied-configuration when the object has it (exact),
//     else from the managed fields of every field manager other than ASO's
//     controller (the manager that writes the status subresource, and any
//     named in Options.OperatorManagers): a field only ASO's controller set
//     is its default or bookkeeping. Admission webhooks' changes are
//     recorded under the request's manager, so spec.azureName equal to
//     what ASO's defaulting webhook writes (metadata.name, or the UUIDv5 of
//     role kinds) is dropped too, unless last-applied says the author wrote
//     it: the name in Azure is the same with or without it.
//   - ownerReferences: dropped; when the spec lost its owner, an
//     ownerReference to an ASO object of the owner's kind becomes
//     spec.owner.
//   - Secrets and ConfigMaps the object reads (SecretReference,
//     *FromConfig, credential-from, the namespace's aso-credential) are
//     listed by name in IMPORT.md, never copied.
//
// The repository: one directory per namespace, one file per object
// (FileName: "<first label of the group>-<kind>-<name>.yaml"), a
// kustomization.yaml in each namespace directory listing its files and one
// at the top listing the namespaces, and IMPORT.md (not YAML, so no renderer
// reads it). One file per object keeps a later change to one resource a
// one-file diff; the kustomizations let Flux, kustomize and gitaso build the
// same set.
//
// Export (`gitaso export`, the way back): ForASO turns gitaso's rendered
// manifests into the ASO objects a cluster should hold, with the reconcile
// policy they should end with.
package migrate
