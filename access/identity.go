package access

import (
	"context"
	"slices"
)

// Right is what a caller may do in a namespace.
type Right string

// The rights, from least to most. admin implies the others; approve and sync
// do not imply each other, and each implies read.
const (
	Read    Right = "read"    // see resources, plans, runs, units, the graph, metrics
	Sync    Right = "sync"    // ask for a run now ("Sync now")
	Approve Right = "approve" // approve a held deletion or cascade
	Admin   Right = "admin"   // manage tokens, read the audit trail, everything else
)

// Rights lists every right in order.
var Rights = []Right{Read, Sync, Approve, Admin}

// Kind says how a caller proved who it is.
type Kind string

const (
	Anonymous Kind = "anonymous" // no credential (loopback without sign-in or tokens)
	User      Kind = "user"      // signed in with OpenID Connect
	Token     Kind = "token"     // a named bearer token
	Forge     Kind = "forge"     // a pull-request comment whose author the forge vouches for
)

// Identity is the caller of one request. It never holds a secret: a token is
// named, never carried.
type Identity struct {
	Kind    Kind     `json:"kind"`
	Subject string   `json:"subject,omitempty"` // OIDC sub, the token's name, or the forge login
	Name    string   `json:"name,omitempty"`    // what to show: email, preferred_username, token name
	Groups  []string `json:"groups,omitempty"`  // the group claim's values (users only)
	Issuer  string   `json:"issuer,omitempty"`  // the OIDC issuer or the forge's URL
}

// String names the identity for a log line or the audit trail, e.g.
// "user alice@example.com", "token ci", "anonymous".
func (id Identity) String() string {
	switch id.Kind {
	case "", Anonymous:
		return string(Anonymous)
	}
	name := id.Name
	if name == "" {
		name = id.Subject
	}
	return string(id.Kind) + " " + name
}

// InGroup reports whether the identity carries group g.
func (id Identity) InGroup(g string) bool { return slices.Contains(id.Groups, g) }

type identityKey struct{}

// WithIdentity returns ctx carrying the identity of the request it serves.
// The identity is request-scoped data, set once by the API's authentication
// and read by its handlers; it steers no control flow by itself.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity put in ctx, or Anonymous.
func IdentityFrom(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok {
		return id
	}
	return Identity{Kind: Anonymous}
}
