package emulator

import (
	"net/http"
	"strings"
)

// Management locks (Microsoft.Authorization/locks at any scope) are enforced as ARM enforces them: under a
// CanNotDelete lock a DELETE answers 409 ScopeLocked; under a ReadOnly lock so do PUT, PATCH, DELETE and POST
// actions (listKeys included). A lock covers its scope and everything beneath it, and a DELETE is refused too when
// anything beneath the deleted resource is locked (a resource group with a locked resource). Locks themselves can
// always be written and removed (with Microsoft.Authorization/locks/* rights).

const lockTypeKey = "microsoft.authorization/locks"

// refuseLocked writes 409 ScopeLocked when a lock forbids the request on p and reports whether it did. For an action
// (pathTail POST) the resource acted on is p.Parent.
func (e *Emulator) refuseLocked(w http.ResponseWriter, r *http.Request, p armPath, info *reqInfo) bool {
	if strings.EqualFold(p.Type, "Microsoft.Authorization/locks") {
		return false
	}
	target := p.ID
	op := "write"
	switch {
	case p.Kind == pathTail:
		target = p.Parent
		op = "action"
	case r.Method == http.MethodDelete:
		op = "delete"
	}
	if target == "" {
		return false
	}
	tk := strings.ToLower(target)
	e.mu.RLock()
	var scopes []string
	for _, l := range e.store.ofType(lockTypeKey, "") {
		body, err := l.decode()
		if err != nil {
			continue
		}
		level := strings.ToLower(getString(body, "properties", "level"))
		covers := scopeContains(l.parentKey, tk) || (op == "delete" && scopeContains(tk, l.parentKey))
		if !covers || (level != "readonly" && op != "delete") {
			continue
		}
		scope := l.ID[:len(l.ID)-len("/providers/Microsoft.Authorization/locks/")-len(l.Name)]
		scopes = append(scopes, scope)
	}
	e.mu.RUnlock()
	if len(scopes) == 0 {
		return false
	}
	verb := op
	if op == "action" {
		verb = "write"
	}
	e.writeErr(w, info, newARMError(http.StatusConflict, "ScopeLocked",
		"The scope '%s' cannot perform %s operation because following scope(s) are locked: '%s'. Please remove the lock and try again.",
		target, verb, strings.Join(scopes, "','")))
	return true
}
