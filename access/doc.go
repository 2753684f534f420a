// Package access says who is calling gitaso's API and page and what they may
// do: the caller's Identity (a person signed in with OpenID Connect, a named
// bearer token, or nobody), the rights gitaso knows (read, sync, approve,
// admin), and a policy granting rights per namespace to groups, users and
// tokens, in the model of Argo CD's RBAC (a policy file, a default role, deny
// wins).
//
// It is pure: it imports no gitaso package, so the API, the page's handlers
// and the forge's comment approvals share one set of rules.
package access
