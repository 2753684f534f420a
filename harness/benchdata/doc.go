// Package benchdata writes generated Git-repository-shaped directories of ASO v2 manifests for gitaso's
// benchmarks. The output is deterministic (same arguments, same bytes) and uses only kinds the seeds'
// platform team uses, in the shapes real repositories have (one directory per namespace, one multi-document
// file per component, owners by name, exported ConfigMaps feeding role assignments).
//
//	// plan benchmark: 10,000 resources in 500 namespaces, owner chains up to 4 deep
//	err := benchdata.Generate(dir, 500, 20, "00000000-0000-0000-0000-000000000000")
//
//	// apply benchmark: 1,000 resources, ResourceGroup → Service Bus namespace → queue
//	err := benchdata.GenerateApplyTree(dir, 1000)
//
// GenerateWith takes Options (depth, location, ...) and returns a Summary of what it wrote.
// The tests read the output through gitaso's own pipeline (source.Dir, planner.Build, Plan) to prove that
// every generated document is a valid ASO manifest and that the shape matches the Summary.
package benchdata
