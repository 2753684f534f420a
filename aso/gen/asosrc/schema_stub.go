package asosrc

// This file stands in for the schema side until schema*.go provides it; delete
// it then. The kinds side calls:
//
//	Schema(root string, pkg Package) (*SchemaFile, error)
//	(*SchemaFile).JSON() ([]byte, error)  // schema/<group>/<version>.json, shared format
//	Exceptions(root string, files []*SchemaFile) ([]byte, error)  // exceptions.json
//
// SchemaFile holds one package's schema facts.
type SchemaFile struct{}
