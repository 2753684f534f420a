package aso

import (
	"context"
	"encoding/json"
)

// ARM is what ASO's rules need from Azure Resource Manager. A rule that
// needs Azure says so in its signature by taking one; every other rule of
// this package is pure. *azure.Client implements it; errors are
// *azure.ResponseError values for ARM's answers (status and code).
type ARM interface {
	Get(ctx context.Context, id, apiVersion string) ([]byte, error)
	Put(ctx context.Context, id, apiVersion string, body []byte) ([]byte, error)
	Delete(ctx context.Context, id, apiVersion string) error
	Post(ctx context.Context, path, apiVersion string, body []byte) ([]byte, error)
	List(ctx context.Context, collectionPath, apiVersion string) ([]json.RawMessage, error)
}
