package aso

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// ARM is what ASO's rules need from Azure Resource Manager. A rule that
// needs Azure says so in its signature by taking one; every other rule of
// this package is pure. *azure.Client implements it; ARM's error answers
// implement ResponseError (*azure.ARMError does).
type ARM interface {
	Get(ctx context.Context, id, apiVersion string) ([]byte, error)
	Put(ctx context.Context, id, apiVersion string, body []byte) ([]byte, error)
	Delete(ctx context.Context, id, apiVersion string) error
	// DeleteWith is Delete with extra query parameters and request headers
	// (apimanagement's deleteSubscriptions=true and If-Match: *).
	DeleteWith(ctx context.Context, id, apiVersion string, query url.Values, header http.Header) error
	Post(ctx context.Context, path, apiVersion string, body []byte) ([]byte, error)
	List(ctx context.Context, collectionPath, apiVersion string) ([]json.RawMessage, error)
}

// ResponseError is an error answer of ARM, as an ARM client reports it.
type ResponseError interface {
	error
	// HTTPStatusCode is the status of the response that carried the error.
	HTTPStatusCode() int
}

// IsNotFound reports whether err is ARM's 404.
func IsNotFound(err error) bool {
	var re ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}
