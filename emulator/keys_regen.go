package emulator

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// Storage account and Service Bus / Event Hubs authorization rule keys, as Azure hands them out:
//
//   - a storage account's keys are 64 random bytes in base64 (88 characters); listKeys answers {"keys": [{keyName,
//     value, permissions: "FULL", creationTime}]} for key1 and key2, and POST regenerateKey {"keyName": "key1"}
//     replaces one and answers the same list. The account's properties.keyCreationTime holds when each key was
//     made (its create, then its last regeneration), and a key is derived from it, so it survives a restart with
//     a data file.
//   - a Service Bus or Event Hubs rule's keys are 32 bytes in base64 (44 characters); listKeys answers keyName,
//     primaryKey, secondaryKey and sb:// connection strings (EntityPath for entity rules), and POST regenerateKeys
//     {"keyType": "PrimaryKey"|"SecondaryKey", "key": optional base64 value} replaces one and answers the same.
//     Regenerated rule keys are held in memory (not in the data file).

const storageTypeKey = "microsoft.storage/storageaccounts"

func init() {
	typePrepares[storageTypeKey] = prepareStorageKeyTimes
}

// prepareStorageKeyTimes sets properties.keyCreationTime (read-only): kept from the stored account, else the
// account's creation time.
func prepareStorageKeyTimes(e *Emulator, p armPath, body, old map[string]any) *armError {
	props := ensureObject(body, "properties")
	if kct, ok := getPath(old, "properties", "keyCreationTime"); ok {
		props["keyCreationTime"] = kct
		return nil
	}
	created := firstNonEmpty(getString(old, "systemData", "createdAt"), armTime(nowUTC()))
	props["keyCreationTime"] = map[string]any{"key1": created, "key2": created}
	return nil
}

func isRuleType(typeKey string) bool {
	return (strings.HasPrefix(typeKey, "microsoft.servicebus/namespaces") || strings.HasPrefix(typeKey, "microsoft.eventhub/namespaces")) &&
		strings.HasSuffix(typeKey, "/authorizationrules")
}

// isKeyAction reports whether p is a key action served here.
func isKeyAction(p armPath) bool {
	pt := strings.ToLower(p.ParentType)
	switch strings.ToLower(p.Tail) {
	case "listkeys":
		return pt == storageTypeKey || isRuleType(pt)
	case "regeneratekey":
		return pt == storageTypeKey
	case "regeneratekeys":
		return isRuleType(pt)
	}
	return false
}

// storageKeyTime is when a storage account key was made (properties.keyCreationTime).
func storageKeyTime(body map[string]any, name string) string {
	return getString(body, "properties", "keyCreationTime", name)
}

// storageKey derives a storage account key (64 bytes, base64) from the emulator's secret, the account and the time
// the key was made.
func (e *Emulator) storageKey(r *resource, name, made string) string {
	sum := sha512.Sum512([]byte(e.adminToken + "|" + r.key + "|" + name + "|" + made))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (e *Emulator) storageKeys(r *resource) (map[string]any, error) {
	body, err := r.decode()
	if err != nil {
		return nil, err
	}
	var keys []any
	for _, n := range []string{"key1", "key2"} {
		made := storageKeyTime(body, n)
		if made == "" { // an account stored before keyCreationTime existed
			made = firstNonEmpty(getString(body, "systemData", "createdAt"), getString(body, "properties", "creationTime"))
		}
		keys = append(keys, map[string]any{"keyName": n, "value": e.storageKey(r, n, made), "permissions": "FULL", "creationTime": made})
	}
	return map[string]any{"keys": keys}, nil
}

// ruleKey is a Service Bus / Event Hubs rule key ("primary" or "secondary"): regenerated or derived. Caller holds
// e.mu.
func (e *Emulator) ruleKey(r *resource, which string) string {
	if v, ok := e.keyOverrides[r.key+"|"+which]; ok {
		return v
	}
	sum := sha256.Sum256([]byte(e.adminToken + "|" + r.key + "|" + which))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// ruleKeys answers listKeys of a Service Bus or Event Hubs rule. Caller holds e.mu.
func (e *Emulator) ruleKeys(r *resource) map[string]any {
	nsName := segmentAfter(r.ID, "namespaces")
	entity := ""
	for _, t := range []string{"queues", "topics", "eventhubs"} {
		if s := segmentAfter(r.ID, t); s != "" {
			entity = s
		}
	}
	ep := "Endpoint=sb://" + nsName + ".servicebus.windows.net/;SharedAccessKeyName=" + r.Name + ";SharedAccessKey="
	suffix := ""
	if entity != "" {
		suffix = ";EntityPath=" + entity
	}
	pk, sk := e.ruleKey(r, "primary"), e.ruleKey(r, "secondary")
	return map[string]any{
		"keyName": r.Name, "primaryKey": pk, "secondaryKey": sk,
		"primaryConnectionString": ep + pk + suffix, "secondaryConnectionString": ep + sk + suffix,
	}
}

// serveKeyAction answers listKeys, regenerateKey and regenerateKeys (isKeyAction).
func (e *Emulator) serveKeyAction(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) bool {
	if !e.authorize(w, c, actionFor(p.ParentType, p.Tail+"/action"), p.Parent, info) {
		return true
	}
	tail := strings.ToLower(p.Tail)
	var in struct {
		KeyName string `json:"keyName"`
		KeyType string `json:"keyType"`
		Key     string `json:"key"`
	}
	if tail != "listkeys" && !e.decodeBody(w, r, info, &in) {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.store.get(strings.ToLower(p.Parent))
	if res == nil {
		e.writeErr(w, info, e.notFound(parseARMPath(p.Parent)))
		return true
	}
	switch tail {
	case "listkeys":
		if res.typeKey == storageTypeKey {
			out, err := e.storageKeys(res)
			if err != nil {
				e.writeErr(w, info, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err))
				return true
			}
			writeJSON(w, http.StatusOK, out)
			return true
		}
		writeJSON(w, http.StatusOK, e.ruleKeys(res))
	case "regeneratekey":
		name := strings.ToLower(in.KeyName)
		if name != "key1" && name != "key2" {
			e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidValuesForRequestParameters",
				"Values for request parameters are invalid: keyName."))
			return true
		}
		body, err := res.decode()
		if err != nil {
			e.writeErr(w, info, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err))
			return true
		}
		props := ensureObject(body, "properties")
		kct, _ := props["keyCreationTime"].(map[string]any)
		if kct == nil {
			kct = map[string]any{}
			for _, n := range []string{"key1", "key2"} {
				kct[n] = firstNonEmpty(getString(body, "systemData", "createdAt"), getString(body, "properties", "creationTime"))
			}
		}
		made := armTime(nowUTC())
		if prev, _ := kct[name].(string); prev == made { // two regenerations within 100ns still give two keys
			made = armTime(nowUTC().Add(100 * time.Nanosecond))
		}
		kct[name] = made
		props["keyCreationTime"] = kct
		res.body = mustJSON(body)
		e.markDirty()
		out, _ := e.storageKeys(res)
		writeJSON(w, http.StatusOK, out)
	case "regeneratekeys":
		var which string
		switch strings.ToLower(in.KeyType) {
		case "primarykey":
			which = "primary"
		case "secondarykey":
			which = "secondary"
		default:
			e.writeErr(w, info, newARMError(http.StatusBadRequest, "BadRequest",
				"The value '%s' of keyType is invalid: it must be PrimaryKey or SecondaryKey.", in.KeyType))
			return true
		}
		v := in.Key
		if v == "" {
			raw := make([]byte, 32)
			_, _ = rand.Read(raw) // never fails (crypto/rand)
			v = base64.StdEncoding.EncodeToString(raw)
		} else if b, err := base64.StdEncoding.DecodeString(v); err != nil || len(b) < 32 {
			e.writeErr(w, info, newARMError(http.StatusBadRequest, "BadRequest",
				"The key provided is not valid: a key must be the base64 encoding of at least 32 bytes."))
			return true
		}
		if e.keyOverrides == nil {
			e.keyOverrides = map[string]string{}
		}
		e.keyOverrides[res.key+"|"+which] = v
		writeJSON(w, http.StatusOK, e.ruleKeys(res))
	}
	return true
}
